//! What both model families do to load weights: check every expected tensor against the file
//! before any upload, upload each one (or draw it at random, for benchmarks) with progress, and
//! upload the RoPE tables.
use super::config::Config;
use super::{Rope, Source};
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::rope_tables_of;
use crate::tensor::{shape_str, Tensor};
use crate::util::{seed, Rng};
use std::borrow::Cow;

/// A family's random values for the weight `name` of `shape` (benchmarks): model-like scales.
pub(super) type RandomValues = fn(name: &str, shape: &[usize], r: &mut Rng) -> Vec<f32>;

/// A stored vector (a norm weight, Qwen3.5's A_log and dt_bias) in f16 / bf16 goes to the device
/// widened to f32, as GGUF files store theirs: the same values (widening is exact, so every
/// result keeps its bits), read by the kernels as plain words. The norm-fused matvecs read two norm
/// weights at every step of their unrolled loop, where a 16-bit word's shifts and masks (and for
/// f16 the exponent's cases) are instructions on the decode's critical path. Matrices keep their
/// dtype: they are the bytes a step streams.
fn widened<'a>(dtype: DType, shape: &[usize], bytes: Cow<'a, [u8]>) -> (DType, Cow<'a, [u8]>) {
    match dtype {
        DType::F16 | DType::BF16 if shape.len() == 1 => {
            (DType::F32, DType::F32.encode_f32(&dtype.decode_f32(&bytes)).into())
        }
        _ => (dtype, bytes),
    }
}

/// Checks the dtype and shape of every stored tensor in `want` (name, shape) before anything is
/// uploaded; a random source has nothing to check. Vectors must be float; matrices too, or, with
/// `quant_matrices`, block-quantized with whole blocks a row.
pub(super) fn check_tensors(
    c: &Config,
    src: &Source,
    want: &[(String, Vec<usize>)],
    quant_matrices: bool,
) -> Result<()> {
    if matches!(src, Source::Random { .. }) {
        return Ok(());
    }
    for (name, shape) in want {
        let (dtype, got, path) = src.info(c, name)?;
        if quant_matrices {
            let ok = dtype.is_float() || (dtype.is_quant() && shape.len() == 2 && shape[1] % dtype.block().0 == 0);
            if !ok {
                return Err(Error::File {
                    path,
                    detail: format!(
                        "tensor `{name}`: dtype {} is not a float type (nor a block-quantized matrix) for shape [{}]",
                        dtype,
                        shape_str(shape)
                    ),
                });
            }
        } else if !dtype.is_float() {
            return Err(Error::File {
                path,
                detail: format!("tensor `{name}`: dtype {dtype} is not a float type"),
            });
        }
        if &got != shape {
            let by = if matches!(src, Source::Gguf(_)) {
                "the GGUF metadata"
            } else {
                "config.json"
            };
            return Err(Error::File {
                path,
                detail: format!(
                    "tensor `{name}`: shape [{}] but {by} implies [{}]",
                    shape_str(&got),
                    shape_str(shape)
                ),
            });
        }
    }
    Ok(())
}

/// A load as every family takes it: the config, where the weights come from, the device, the
/// context the RoPE tables cover, and `progress(done, total)`, called after each tensor.
pub(super) struct Load<'a> {
    pub c: &'a Config,
    pub src: &'a Source<'a>,
    pub dev: &'a dyn Backend,
    pub max_ctx: usize,
    pub progress: &'a mut dyn FnMut(usize, usize),
}

/// Uploads a family's weights one tensor at a time, counting them for `progress`.
pub(super) struct Loader<'a> {
    pub c: &'a Config,
    pub src: &'a Source<'a>,
    pub dev: &'a dyn Backend,
    pub max_ctx: usize,
    progress: &'a mut dyn FnMut(usize, usize),
    random: RandomValues,
    done: usize,
    total: usize,
}

impl<'a> Loader<'a> {
    /// `total` tensors to count; `random` draws the family's random weights.
    pub fn new(req: Load<'a>, random: RandomValues, total: usize) -> Self {
        Loader {
            c: req.c,
            src: req.src,
            dev: req.dev,
            max_ctx: req.max_ctx,
            progress: req.progress,
            random,
            done: 0,
            total,
        }
    }

    /// The stored tensor `name` as `shape` on the device (a random source draws it), counted.
    pub fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let t = self.uncounted(name, shape)?;
        self.count(1);
        Ok(t)
    }

    /// The same, not counted (a part of a tensor, or one fused from several).
    pub fn uncounted(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let (dtype, bytes) = self.bytes(name, shape)?;
        let t = self.dev.alloc(dtype, shape)?;
        self.dev.upload(&t, &bytes)?;
        Ok(t)
    }

    /// Random weights of the family's scales, seeded by the name; vectors (norms) in f32, a
    /// quantized model's as GGUF files keep them, a 16-bit one's as `widened` makes them.
    pub fn random(&self, name: &str, shape: &[usize], dtype: DType, seed_: u64) -> Result<Tensor> {
        let (dtype, bytes) = self.random_bytes(name, shape, dtype, seed_);
        let t = self.dev.alloc(dtype, shape)?;
        self.dev.upload(&t, &bytes)?;
        Ok(t)
    }

    fn random_bytes(&self, name: &str, shape: &[usize], dtype: DType, seed_: u64) -> (DType, Cow<'a, [u8]>) {
        let mut r = Rng::new(seed_ ^ seed(name));
        let vals = (self.random)(name, shape, &mut r);
        let dtype = match self.src {
            Source::Random { mix, .. } => mix.dtype(self.c, name, dtype),
            _ => dtype,
        };
        let dtype = if dtype.is_quant() && shape.len() == 1 {
            DType::F32
        } else {
            dtype
        };
        widened(dtype, shape, dtype.encode_f32(&vals).into())
    }

    /// A tensor's dtype and bytes as `uncounted` would upload them (for tensors fused on the host).
    pub fn bytes(&self, name: &str, shape: &[usize]) -> Result<(DType, Cow<'a, [u8]>)> {
        match self.src {
            Source::Random { dtype, seed, .. } => Ok(self.random_bytes(name, shape, *dtype, *seed)),
            _ => {
                let f = self.src.fetch(self.c, name)?;
                Ok(widened(f.dtype, shape, f.bytes))
            }
        }
    }

    /// Counts `n` tensors loaded.
    pub fn count(&mut self, n: usize) {
        self.done += n;
        (self.progress)(self.done, self.total);
    }

    /// RoPE cos/sin tables [max_ctx, inv_freq.len()] of these inverse frequencies, on the device.
    pub fn rope(&self, inv_freq: &[f64]) -> Result<Rope> {
        let max_ctx = self.max_ctx;
        let (cos, sin) = rope_tables_of(inv_freq, max_ctx);
        let half = inv_freq.len();
        let up = |v: &[f32]| -> Result<Tensor> {
            let t = self.dev.alloc(DType::F32, &[max_ctx, half])?;
            self.dev.upload(&t, &DType::F32.encode_f32(v))?;
            Ok(t)
        };
        Ok(Rope {
            cos: up(&cos)?,
            sin: up(&sin)?,
        })
    }
}

/// gate_proj and up_proj with their rows interleaved into one [2F, D] tensor (not counted).
pub fn gate_up(ld: &Loader, gate: &str, up: &str) -> Result<Tensor> {
    let (c, dev) = (ld.c, ld.dev);
    let (f, d) = (c.intermediate_size, c.hidden_size);
    if let Source::Random { dtype, seed, .. } = ld.src {
        return ld.random(gate, &[2 * f, d], *dtype, *seed);
    }
    let (g, u) = (ld.src.fetch(c, gate)?, ld.src.fetch(c, up)?);
    if g.dtype != u.dtype {
        return Err(Error::File {
            path: u.path,
            detail: format!("tensor `{up}`: dtype {} differs from `{gate}`'s {}", u.dtype, g.dtype),
        });
    }
    let (gb, ub) = (&g.bytes, &u.bytes);
    let row = g.dtype.nbytes(d);
    let mut bytes = Vec::with_capacity(2 * gb.len());
    for j in 0..f {
        bytes.extend_from_slice(&gb[j * row..(j + 1) * row]);
        bytes.extend_from_slice(&ub[j * row..(j + 1) * row]);
    }
    let t = dev.alloc(g.dtype, &[2 * f, d])?;
    dev.upload(&t, &bytes)?;
    Ok(t)
}

/// Matrices `parts` (name, rows; all `cols` wide) stacked row-wise into one tensor (uploaded once,
/// not counted) and each as a row view of it: one linear then projects them all. None when their
/// dtypes differ (a GGUF may keep one in another quantization) or a view would not start on a
/// word-aligned block (`Tensor::view`; an odd number of 34-, 18- or 210-byte blocks before it):
/// the caller loads them apart.
pub fn stacked(ld: &Loader, parts: &[(String, usize)], cols: usize) -> Result<Option<(Tensor, Vec<Tensor>)>> {
    let mut dt = None;
    let mut bytes = Vec::new();
    for (name, rows) in parts {
        let (d, b) = ld.bytes(name, &[*rows, cols])?;
        if dt.is_some_and(|x| x != d) {
            return Ok(None);
        }
        dt = Some(d);
        bytes.push(b);
    }
    let Some(dt) = dt else { return Ok(None) };
    let total: usize = parts.iter().map(|p| p.1).sum();
    let t = ld.dev.alloc(dt, &[total, cols])?;
    let mut views = Vec::new();
    let mut first = 0;
    for (_, rows) in parts {
        match t.view(first * cols, &[*rows, cols]) {
            Ok(v) => views.push(v),
            Err(_) => return Ok(None),
        }
        first += rows;
    }
    ld.dev.upload(&t, &bytes.concat())?;
    Ok(Some((t, views)))
}
