//! KvWrite: new key / value rows into a paged pool, encoded in the pool's dtype (round to nearest
//! even, as every rounding of the reference).
use crate::dtype::DType;

/// Writes row t of `x` ([T, row] f32) over pool row slots[t] of `pool` (the pool's bytes in
/// `dtype`, rows of `row` elements). Slots are checked by the caller (`op::check_slots`).
pub fn kv_write(pool: &mut [u8], dtype: DType, row: usize, x: &[f32], slots: &[u32]) {
    let rb = dtype.nbytes(row);
    for (t, &s) in slots.iter().enumerate() {
        let at = s as usize * rb;
        pool[at..at + rb].copy_from_slice(&dtype.encode_f32(&x[t * row..(t + 1) * row]));
    }
}
