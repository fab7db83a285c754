// gdn_rec_tile's output hooks (gdn_recurrent_tile.wgsl) for gdn_recurrent and gdn_batch: column
// jj's o stored as it is, at element i of o, by the invocation that `own`s the column; nothing to
// load before a token.
fn tile_pre(i: u32, jj: u32, own: bool) {}

fn tile_out(i: u32, jj: u32, os: f32, own: bool, tid: u32) {
    if (own) {
        st_o(i, os);
    }
}
