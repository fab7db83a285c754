// gdn_rec_tile's input hooks (gdn_recurrent_tile.wgsl) as they are: q/k/v as qkv holds them,
// nothing to do after a sequence; for gdn_recurrent, gdn_batch and gdn_conv_norm's form over a
// conv dispatched apart (conv_handover, its hand-over's call, with no conv state to write).
fn in_x(t: u32, e: u32) -> f32 {
    return ld_qkv(t * p.c + e);
}

fn tile_seq(row: u32, cnt: u32, slot: u32, fresh: bool) {}

fn tile_end(e: u32, own: bool) {}

fn conv_handover(t: u32, h: u32, tid: u32) {}
