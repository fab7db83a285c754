/// `out[t, :] = table[ids[t], :]`; an id past the table gives zeros.
pub fn embedding(table: &[f32], d: usize, ids: &[u32]) -> Vec<f32> {
    let v = table.len() / d;
    let mut out = vec![0f32; ids.len() * d];
    for (t, &id) in ids.iter().enumerate() {
        if (id as usize) < v {
            out[t * d..(t + 1) * d].copy_from_slice(&table[id as usize * d..(id as usize + 1) * d]);
        }
    }
    out
}
