//! rms_norm (shaders/rms_norm.wgsl; also per-head q/k norm, rows of head_dim) and add_rms_norm
//! (shaders/add_rms_norm.wgsl). One workgroup per row. `dispatch_rows` serves rms_norm_gated too
//! and prepends shaders/rms_norm_rows.wgsl (their Params); every norm kernel, rms_norm_rope
//! included, has shaders/wg_tree.wgsl + wg_sum.wgsl (the workgroup reduction of the sum of squares).
use super::kernel::{grid, read, write, Binding, KernelKey};
use super::{Support, WgpuBackend};
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

/// Params of rms_norm, add_rms_norm and rms_norm_gated (shaders/rms_norm_rows.wgsl).
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    rows: u32,
    d: u32,
    eps: f32,
    unit_offset: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

pub fn supports(_b: &WgpuBackend, _desc: &OpDesc) -> Support {
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::RmsNorm { eps, unit_offset } = *op else {
        unreachable!()
    };
    let bindings = vec![read("x", i[0].dtype), read("w", i[1].dtype), write("y", o[0].dtype)];
    dispatch_rows(
        b,
        "rms_norm",
        "",
        || b.source("rms_norm.wgsl").to_string(),
        bindings,
        &[i[0], i[1], o[0]],
        i[1].shape[0],
        eps,
        unit_offset,
    )
}

/// add_rms_norm: sum = a + b, y = rms_norm(sum).
pub fn record_add(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::AddRmsNorm { eps, unit_offset } = *op else {
        unreachable!()
    };
    let bindings = vec![
        read("a", i[0].dtype),
        read("b", i[1].dtype),
        read("w", i[2].dtype),
        write("sum", o[0].dtype),
        write("y", o[1].dtype),
    ];
    let tensors = [i[0], i[1], i[2], o[0], o[1]];
    dispatch_rows(
        b,
        "add_rms_norm",
        "",
        || format!("fn keep_b(i: u32, v: f32) {{}}\n{}", b.source("add_rms_norm.wgsl")),
        bindings,
        &tensors,
        i[2].shape[0],
        eps,
        unit_offset,
    )
}

/// One workgroup per row of `d` elements of `tensors[0]`; the workgroup grows with the row. `src`
/// gives the kernel's text (called only while its pipeline is not built); `variant` tells apart
/// kernels of one entry and bindings whose `src` differs.
#[allow(clippy::too_many_arguments)]
pub(super) fn dispatch_rows(
    b: &WgpuBackend,
    entry: &'static str,
    variant: &str,
    src: impl FnOnce() -> String,
    bindings: Vec<Binding>,
    tensors: &[&Tensor],
    d: usize,
    eps: f32,
    unit_offset: bool,
) -> Result<()> {
    let rows = tensors[0].numel() / d;
    let wg: u32 = if d >= 1024 {
        256
    } else if d >= 256 {
        128
    } else {
        64
    };
    let key = KernelKey {
        entry,
        bindings,
        variant: format!("wg{wg}{variant}"),
    };
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        d: d as u32,
        eps,
        unit_offset: unit_offset as u32,
    };
    b.dispatch(
        &key,
        || {
            let src = src();
            (
                format!(
                    "{}\n{}\n{}\n{src}\n{}",
                    b.source("rms_norm_rows.wgsl"),
                    b.source("wg_tree.wgsl"),
                    b.source("wg_sum.wgsl"),
                    // a kernel file may bring its own entry (add_rms_norm's keeps short rows in registers)
                    if src.contains(&format!("fn {entry}(")) {
                        String::new()
                    } else {
                        row_entry(entry)
                    }
                ),
                vec![("WG", format!("{wg}u"))],
            )
        },
        bytemuck::bytes_of(&p),
        tensors,
        grid(rows as u32),
    )
}

/// The entry point of a row norm: every one is `norm_rows` (rms_norm_rows.wgsl) over the kernel
/// file's `norm_in` / `norm_out`, under the kernel's own name (labels and profiles keep it).
fn row_entry(entry: &str) -> String {
    format!(
        "@compute @workgroup_size(WG)\nfn {entry}(@builtin(workgroup_id) wid: vec3<u32>, \
         @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{\n    \
         norm_rows(wid, nwg, lid);\n}}\n"
    )
}
