// gdn_batch's lone-sequence prefill on the chunked form (gdn.rs `lone_chunked`: batch invariance
// off, one sequence over a pool of one slot): the head of gdn_chunk_scan.wgsl. The scan's state is
// the slot, read and written in place (a workgroup reads its own state tile before the chunks and
// writes it back after them; no other workgroup touches it), zeros where the sequence starts
// fresh. A descriptor other than the batch's one sequence (first row 0, every row, slot 0) writes
// nothing, as gdn_batch writes nothing for it.
// seqs [1, 4]: first row, token count, state slot, fresh.

fn scan_seq_ok() -> bool {
    return ld_seqs(0u) == 0u && ld_seqs(1u) == p.t && ld_seqs(2u) == 0u;
}

fn scan_state_in(i: u32) -> f32 {
    if (ld_seqs(3u) != 0u) {
        return 0.0;
    }
    return ld_state(i);
}

fn scan_state_out(i: u32, v: f32) {
    st_state(i, v);
}
