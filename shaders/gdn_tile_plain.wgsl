// gdn_rec_tile's hooks (gdn_recurrent_tile.wgsl) for gdn_recurrent and gdn_batch: q/k/v as qkv
// holds them; column jj's o stored as it is, at element i of o, by the invocation that `own`s the
// column; nothing to load before a token, nor to do after a sequence.
fn in_x(t: u32, e: u32) -> f32 {
    return ld_qkv(t * p.c + e);
}

fn tile_seq(row: u32, cnt: u32, slot: u32, fresh: bool) {}

fn tile_end(e: u32, own: bool) {}

fn tile_pre(i: u32, jj: u32, own: bool) {}

fn tile_out(i: u32, jj: u32, os: f32, own: bool, tid: u32) {
    if (own) {
        st_o(i, os);
    }
}
