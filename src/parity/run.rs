//! Running one case on one device against the CPU reference, with guard values around outputs.
use super::case::{Case, Init, Input};
use super::compare::{compare, tolerance};
use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, Support};
use crate::error::Result;
use crate::op::TensorDesc;
use crate::tensor::Tensor;
use serde::{Deserialize, Serialize};

/// Elements of guard before and after every output (even, so 16-bit views stay word aligned).
const GUARD: usize = 16;
const GUARD_BYTE: u8 = 0xA5;
/// Output regions start as this pattern; an element a kernel never writes shows up as a mismatch.
const FILL_BYTE: u8 = 0x5A;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Outcome {
    Pass { compared: usize, nmse: f64 },
    Fail { error: String },
    Skip { reason: String },
}

/// One output in a guarded buffer: [GUARD | region | GUARD].
struct Guarded {
    whole: Tensor,
    region: Tensor,
}

fn guarded(dev: &dyn Backend, d: &TensorDesc, init: Option<&Init>) -> Result<Guarded> {
    let n = d.numel();
    let total = GUARD + n + GUARD + (n % 2);
    let whole = dev.alloc(d.dtype, &[total])?;
    let mut bytes = vec![GUARD_BYTE; total * d.dtype.size()];
    let s = d.dtype.size();
    match init {
        Some(init) => bytes[GUARD * s..(GUARD + n) * s].copy_from_slice(
            &Input {
                desc: d.clone(),
                init: init.clone(),
            }
            .bytes(),
        ),
        None => bytes[GUARD * s..(GUARD + n) * s].fill(FILL_BYTE),
    }
    dev.upload(&whole, &bytes)?;
    let region = whole.view(GUARD, &d.shape)?;
    Ok(Guarded { whole, region })
}

/// Runs `case` on `dev`; returns the bytes of each output region, after checking every guard.
pub fn execute(case: &Case, dev: &dyn Backend) -> std::result::Result<Vec<Vec<u8>>, String> {
    execute_with(case, dev, &|i, o| dev.run(&case.op, i, o))
}

/// `execute` with the op recorded by `run` instead of `dev.run` (tests that run a deliberately
/// broken kernel variant through the same guarded comparison).
pub fn execute_with(
    case: &Case,
    dev: &dyn Backend,
    run: &dyn Fn(&[&Tensor], &[&Tensor]) -> Result<()>,
) -> std::result::Result<Vec<Vec<u8>>, String> {
    let e = |err: crate::error::Error| err.to_string();
    // Inputs also sit between guards, filled with all-ones bits (NaN for floats, u32::MAX for
    // ids): a kernel that reads past an input picks up NaN or an out-of-range id and goes red.
    let mut ins = Vec::new();
    for i in &case.inputs {
        if i.desc.dtype.is_quant() {
            ins.push(quant_input(dev, i).map_err(e)?);
            continue;
        }
        let (n, s) = (i.desc.numel(), i.desc.dtype.size());
        let total = GUARD + n + GUARD + (n % 2);
        let whole = dev.alloc(i.desc.dtype, &[total]).map_err(e)?;
        let mut bytes = vec![0xFFu8; total * s];
        bytes[GUARD * s..(GUARD + n) * s].copy_from_slice(&i.bytes());
        dev.upload(&whole, &bytes).map_err(e)?;
        ins.push(whole.view(GUARD, &i.desc.shape).map_err(e)?);
    }
    let outs: Vec<Guarded> = case
        .outputs
        .iter()
        .zip(&case.out_init)
        .map(|(d, init)| guarded(dev, d, init.as_ref()))
        .collect::<Result<_>>()
        .map_err(e)?;
    let in_refs: Vec<&Tensor> = ins.iter().collect();
    let out_refs: Vec<&Tensor> = outs.iter().map(|g| &g.region).collect();
    let ran = super::with_invariance(dev, case.invariance, || run(&in_refs, &out_refs));
    ran.map_err(e)?;
    dev.flush().map_err(e)?;
    let mut result = Vec::new();
    for (k, g) in outs.iter().enumerate() {
        let all = dev.download(&g.whole).map_err(e)?;
        let s = g.whole.dtype.size();
        let n = g.region.numel();
        let (lo, hi) = (GUARD * s, (GUARD + n) * s);
        if let Some(p) = all[..lo].iter().position(|&b| b != GUARD_BYTE) {
            return Err(format!(
                "output {k}: write before the tensor (guard byte {p} of {lo} clobbered)"
            ));
        }
        if let Some(p) = all[hi..].iter().position(|&b| b != GUARD_BYTE) {
            return Err(format!(
                "output {k}: write past the tensor (guard byte {p} after the end clobbered)"
            ));
        }
        result.push(all[lo..hi].to_vec());
    }
    Ok(result)
}

/// A block-quantized input between guard blocks of all-ones bytes (a NaN f16 scale, so a kernel
/// that reads a block past the tensor goes red): two blocks after, and before it two blocks of
/// a type whose blocks are whole words, eight of 34-, 18- or 210-byte blocks (so the view starts
/// on 16 bytes, where the vec4 lanes take it, as a stacked weight's later rows do).
fn quant_input(dev: &dyn Backend, i: &Input) -> Result<Tensor> {
    let (be, bb) = i.desc.dtype.block();
    let n = i.desc.numel();
    let before = if bb % 4 == 0 { 2 * be } else { 8 * be };
    let total = before + n.div_ceil(be) * be + 2 * be;
    let whole = dev.alloc(i.desc.dtype, &[total])?;
    let mut bytes = vec![0xFFu8; i.desc.dtype.nbytes(total)];
    let data = i.bytes();
    let at = i.desc.dtype.nbytes(before);
    bytes[at..at + data.len()].copy_from_slice(&data);
    dev.upload(&whole, &bytes)?;
    whole.view(before, &i.desc.shape)
}

/// The reference bytes of every output, from the CPU backend (also guard-checked).
pub fn reference(case: &Case) -> std::result::Result<Vec<Vec<u8>>, String> {
    execute(case, &CpuBackend::new()).map_err(|m| format!("cpu reference: {m}"))
}

/// Runs `case` on `dev` and compares with `want` (from `reference`). Unsupported -> Skip with the reason.
pub fn check(case: &Case, dev: &dyn Backend, want: &std::result::Result<Vec<Vec<u8>>, String>) -> Outcome {
    let support = super::with_invariance(dev, case.invariance, || dev.supports(&case.desc()));
    if let Support::No(reason) = support {
        return Outcome::Skip {
            reason: format!("unsupported: {reason}"),
        };
    }
    let want = match want {
        Ok(w) => w,
        Err(m) => return Outcome::Fail { error: m.clone() },
    };
    let got = match execute(case, dev) {
        Ok(g) => g,
        Err(m) => return Outcome::Fail { error: m },
    };
    compare_outputs(case, &got, want)
}

/// Compares `got` (from `execute` / `execute_with`) with the reference, output by output.
pub fn compare_outputs(case: &Case, got: &[Vec<u8>], want: &[Vec<u8>]) -> Outcome {
    let (mut compared, mut nmse) = (0usize, 0f64);
    for (k, d) in case.outputs.iter().enumerate() {
        match compare(d.dtype, &got[k], &want[k], tolerance(case.family, d.dtype)) {
            Ok(c) => {
                compared += c.n;
                nmse = nmse.max(c.nmse);
            }
            Err(m) => {
                return Outcome::Fail {
                    error: format!("output {k} ({}): {m}", d.dtype),
                }
            }
        }
    }
    if compared == 0 {
        return Outcome::Fail {
            error: "zero elements compared".into(),
        };
    }
    Outcome::Pass { compared, nmse }
}
