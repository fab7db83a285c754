//! A parity case: an op with its operands' dtypes, shapes and deterministic input data.
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::op::{Op, OpDesc, TensorDesc};
use crate::tensor::shape_str;
use crate::util::Rng;

/// How an input is filled. Every generator is deterministic in its seed.
#[derive(Clone, Debug)]
pub enum Init {
    /// N(0, std^2)
    Normal { seed: u64, std: f32 },
    /// N(0, std^2) for the first `valid` elements, NaN after (catches reads past a KV cache's end)
    NormalNanTail { seed: u64, std: f32, valid: usize },
    /// uniform integers in 0..max
    Ids { seed: u64, max: u32 },
    /// explicit values (encoded into the input's dtype)
    Values(Vec<f32>),
    /// explicit u32 values
    U32s(Vec<u32>),
    /// valid random blocks of the input's block-quantized dtype (`quant::random_blocks`)
    QuantBlocks { seed: u64 },
}

#[derive(Clone, Debug)]
pub struct Input {
    pub desc: TensorDesc,
    pub init: Init,
}

pub fn input(dtype: DType, shape: &[usize], init: Init) -> Input {
    Input {
        desc: TensorDesc::new(dtype, shape),
        init,
    }
}

#[derive(Clone, Debug)]
pub struct Case {
    /// Family, e.g. `rms_norm` or `qk_norm` (groups ids and picks tolerances).
    pub family: &'static str,
    /// Stable, printable: `rms_norm[bf16,5x7x4097]`.
    pub id: String,
    pub op: Op,
    pub inputs: Vec<Input>,
    pub outputs: Vec<TensorDesc>,
    /// Initial contents of in-out outputs (e.g. a KV cache the op appends to); `None`: the output
    /// starts as a fill pattern, so an element the op never writes shows up as a mismatch.
    pub out_init: Vec<Option<Init>>,
    /// The batch-invariant family of kernels the device runs the op under (`Off`: its default).
    pub invariance: BatchInvariance,
}

impl Case {
    /// Builds the id from the family, a tag (dtypes and parameters) and the first input's shape.
    pub fn new(family: &'static str, tag: &str, op: Op, inputs: Vec<Input>, outputs: Vec<TensorDesc>) -> Case {
        let id = format!("{family}[{tag},{}]", shape_str(&inputs[0].desc.shape));
        let out_init = vec![None; outputs.len()];
        Case {
            family,
            id,
            op,
            inputs,
            outputs,
            out_init,
            invariance: BatchInvariance::Off,
        }
    }
    /// The op runs under the kernel family `mode` (the serving engine's), named in the id.
    pub fn with_invariance(mut self, mode: BatchInvariance) -> Case {
        self.id = format!("{}/{mode:?}", self.id);
        self.invariance = mode;
        self
    }
    /// Output `k` starts with `init` instead of the fill pattern (an in-out operand).
    pub fn with_out_init(mut self, k: usize, init: Init) -> Case {
        self.out_init[k] = Some(init);
        self
    }
    pub fn desc(&self) -> OpDesc {
        OpDesc::new(
            self.op.clone(),
            self.inputs.iter().map(|i| i.desc.clone()).collect(),
            self.outputs.clone(),
        )
    }
}

impl Input {
    /// The input's bytes in its dtype.
    pub fn bytes(&self) -> Vec<u8> {
        let n = self.desc.numel();
        let d = self.desc.dtype;
        match &self.init {
            Init::Normal { seed, std } => {
                let mut r = Rng::new(*seed);
                let v: Vec<f32> = (0..n).map(|_| (r.normal() * *std as f64) as f32).collect();
                d.encode_f32(&v)
            }
            Init::NormalNanTail { seed, std, valid } => {
                let mut r = Rng::new(*seed);
                let v: Vec<f32> = (0..n)
                    .map(|i| {
                        if i < *valid {
                            (r.normal() * *std as f64) as f32
                        } else {
                            f32::NAN
                        }
                    })
                    .collect();
                d.encode_f32(&v)
            }
            Init::Ids { seed, max } => {
                let mut r = Rng::new(*seed);
                let v: Vec<u32> = (0..n).map(|_| (r.next_u64() % *max as u64) as u32).collect();
                u32_bytes(d, &v)
            }
            Init::Values(v) => {
                assert_eq!(v.len(), n, "Init::Values length");
                d.encode_f32(v)
            }
            Init::U32s(v) => {
                assert_eq!(v.len(), n, "Init::U32s length");
                u32_bytes(d, v)
            }
            Init::QuantBlocks { seed } => crate::quant::random_blocks(d, n, *seed),
        }
    }
}

fn u32_bytes(d: DType, v: &[u32]) -> Vec<u8> {
    if d.is_float() {
        d.encode_f32(&v.iter().map(|&x| x as f32).collect::<Vec<_>>())
    } else {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
}
