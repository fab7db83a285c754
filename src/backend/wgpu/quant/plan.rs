//! The plan of a quantized linear: which kernel and lanes (`Kind`, `Lanes`), and the workgroup
//! shape each takes for an N x K weight on this device.
use super::wbase;
use crate::backend::wgpu::WgpuBackend;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// The lanes of a matvec: scalar words (qlanes.wgsl, any x dtype), the type's vec4 lanes (f32 x
/// read as vec4), or q4_k's integer-dot lanes over x as byte limbs (q4_k_dp.wgsl): limbs from the
/// xlimbs.wgsl pre-pass (`Limbs`), or made by each workgroup into workgroup memory (`LimbsWg`,
/// the qmatvec_xs.wgsl entry; its `sg` means subgroups of exactly 32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Lanes {
    Words,
    V4,
    Limbs,
    LimbsWg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Matvec { sg: bool, lanes: Lanes },
    Embed,
}

/// Whether a dtype has vec4 matvec lanes (q8_0_v4.wgsl, q4_k_v4.wgsl).
pub(super) fn has_v4(d: DType) -> bool {
    matches!(d, DType::Q8_0 | DType::Q4K)
}

/// The matvec lanes for x · Wᵀ. The vec4 lanes where the type has them, x is f32 starting on a
/// vec4 and every row of w starts on 16 bytes; for q4_k there, the integer-dot lanes for
/// matrices of at least `Tuning::limbs_wg_min` elements and K >= 2048 (shorter rows, 16 slots of
/// 64 for 32 threads, keep the vec4 lanes): x limbs made by the workgroup, or by a pre-pass from
/// `Tuning::limbs_pre_min`, or where x's limbs take more than one chunk of workgroup memory (each
/// chunk costs every workgroup a conversion and two barriers, more than the pre-pass's one
/// dispatch). Else the scalar words.
pub(super) fn lanes(b: &WgpuBackend, x: &Tensor, w: &Tensor) -> Result<Lanes> {
    let k = *w.shape.last().unwrap_or(&0);
    if x.dtype != DType::F32 || x.offset % 4 != 0 || !v4_rows(w)? {
        return Ok(Lanes::Words);
    }
    if !limb_sized(b, w.dtype, w.shape[0], k) {
        return Ok(Lanes::V4);
    }
    Ok(
        match w.numel() < b.tuning.limbs_pre_min && xs_one_chunk(b, k, w.shape[0]) {
            true => Lanes::LimbsWg,
            false => Lanes::Limbs,
        },
    )
}

/// Whether w's type has vec4 lanes and every row of w starts on 16 bytes.
pub(super) fn v4_rows(w: &Tensor) -> Result<bool> {
    let rowb = w.dtype.nbytes(*w.shape.last().unwrap_or(&0));
    Ok(has_v4(w.dtype) && wbase(w, "linear")? % 16 == 0 && rowb % 16 == 0)
}

/// Whether a weight of dtype `d` and N x K takes the integer-dot lanes where x allows them: q4_k
/// from `Tuning::limbs_wg_min` elements with K >= 2048.
pub(super) fn limb_sized(b: &WgpuBackend, d: DType, n: usize, k: usize) -> bool {
    d == DType::Q4K && k >= 2048 && n * k >= b.tuning.limbs_wg_min
}

/// Threads and rows of a matvec workgroup, from a sweep of WG 32..256, R 1..8, U 1..4 over
/// K 1024..14336, N 1024..151936: one subgroup's worth of threads and 4 rows was best or within a
/// few % where there are enough rows (more rows: fewer workgroups and more registers, no gain),
/// but with few rows and long ones (N 4096, K 14336) the GPU runs short of threads: the workgroup
/// then doubles (up to 256) while fewer than ~10^5 threads run and each keeps at least 32
/// elements of the row.
fn matvec_shape(n: usize, k: usize) -> (u32, u32) {
    let r = if n >= 2048 { 4 } else { 2 };
    let mut wg = 32;
    while wg < 256 && n.div_ceil(r) * wg < 100_000 && k / (2 * wg) >= 32 {
        wg *= 2;
    }
    (wg as u32, r as u32)
}

/// A qmatvec workgroup's threads, rows and slots a trip: matvec_shape's and two a trip, except on
/// the pre-pass limb lanes (q4_k from 2^27 elements), whose wider slots hold more registers:
/// where the workgroup stays at 32 threads (many rows) 3 rows rather than 4, so more workgroups
/// fit a multiprocessor, and where it grew (few long rows) four slots a trip, more loads in flight
/// for the few threads there are.
pub(super) fn matvec_plan(n: usize, k: usize, lanes: Lanes) -> (u32, u32, u32) {
    let (wg, r) = matvec_shape(n, k);
    let limbs = lanes == Lanes::Limbs;
    let r = if limbs && wg == 32 && r == 4 { 3 } else { r };
    (wg, r, if limbs && wg > 32 { 4 } else { 2 })
}

/// Threads and rows of a workgroup of the qmatvec_xs entry (x limbs made in workgroup memory):
/// 8 groups of 32 threads; 8 rows a group where there are many rows (x converted once for 64
/// rows), else 4 (fewer rows a workgroup keep enough workgroups for the GPU).
pub(super) fn xs_shape(n: usize) -> (u32, u32) {
    (256, if n >= 8192 { 8 } else { 4 })
}

/// Elements of x a workgroup turns into limbs at a time (qmatvec_xs.wgsl KC): a multiple of 256
/// whose limbs (112 bytes a 32-element block) fit in the device's workgroup memory beside the
/// reduction's, the same for every chunk of a K.
pub(super) fn xs_chunk(b: &WgpuBackend, k: usize, wg: u32, r: u32, sg: bool, cap: Option<usize>) -> usize {
    let red = if sg { 0 } else { (wg * r * 4) as usize };
    let fit = ((b.caps.max_workgroup_storage as usize).saturating_sub(red) / 112 * 32 / 256 * 256).max(256);
    let cap = cap.map_or(fit, |c| c.min(fit));
    let chunks = k.div_ceil(cap);
    k.div_ceil(chunks).div_ceil(256) * 256
}

/// Whether qmatvec_xs turns a K-long x row into limbs in one chunk (its default shape for N rows).
fn xs_one_chunk(b: &WgpuBackend, k: usize, n: usize) -> bool {
    let (wg, r) = xs_shape(n);
    xs_chunk(b, k, wg, r, sg32(b), None) >= k
}

/// Subgroups exactly 32 wide (qmatvec_xs sums a 32-thread group by shuffles).
pub(super) fn sg32(b: &WgpuBackend) -> bool {
    b.caps.subgroup && b.caps.subgroup_min == 32 && b.caps.subgroup_max == 32
}
