//! A tensor is a contiguous row-major view (shape, dtype, element offset) into a backend buffer.
//! Views share the buffer: a KV cache slot is a view at an offset into the cache tensor.
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::any::Any;
use std::sync::Arc;

/// A backend's storage. Each backend downcasts to its own type.
pub trait Storage: Any + Send + Sync {
    /// Size of the underlying buffer in elements of `dtype` (whole buffer, not the view).
    fn capacity_bytes(&self) -> usize;
    fn as_any(&self) -> &dyn Any;
}

#[derive(Clone)]
pub struct Tensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Offset of the first element, in elements of `dtype`. Even for 16-bit dtypes (word aligned).
    pub offset: usize,
    pub storage: Arc<dyn Storage>,
    /// Name of the backend that owns `storage` (for error messages and misuse checks).
    pub device: Arc<str>,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor({}, {:?}, +{} on {})",
            self.dtype, self.shape, self.offset, self.device
        )
    }
}

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

pub fn shape_str(shape: &[usize]) -> String {
    shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x")
}

impl Tensor {
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
    pub fn nbytes(&self) -> usize {
        self.dtype.nbytes(self.numel())
    }
    /// For a quantized dtype the offset is a whole number of blocks (see `view`).
    pub fn byte_offset(&self) -> usize {
        self.dtype.nbytes(self.offset)
    }
    /// A view of `shape` starting `elem_offset` elements into this tensor's region. A quantized
    /// view starts on a whole block at a word-aligned byte: kernels read blocks through 32-bit
    /// words, so a type whose blocks are not whole words (q8_0's 34 bytes, q4_0's 18, q6_k's
    /// 210) starts on an even block (a stacked q/k/v weight's rows do).
    pub fn view(&self, elem_offset: usize, shape: &[usize]) -> Result<Tensor> {
        let off = self.offset + elem_offset;
        let (be, bb) = self.dtype.block();
        if be > 1 && (off % be != 0 || off / be * bb % 4 != 0) {
            return Err(Error::shape(
                "view",
                format!(
                    "{} view offset {off} is not a whole number of blocks at a word-aligned byte",
                    self.dtype
                ),
            ));
        }
        if be == 1 && bb == 2 && off % 2 != 0 {
            return Err(Error::shape(
                "view",
                format!("16-bit view offset {off} is not word aligned"),
            ));
        }
        if elem_offset + numel(shape) > self.numel() {
            return Err(Error::shape(
                "view",
                format!(
                    "view [{}]+{} exceeds tensor {:?}",
                    shape_str(shape),
                    elem_offset,
                    self.shape
                ),
            ));
        }
        Ok(Tensor {
            shape: shape.to_vec(),
            offset: off,
            ..self.clone()
        })
    }
    /// The same elements read as another dtype of the same element size (u32 <-> f32): one buffer
    /// then holds outputs of both, and a step reads them back in one download.
    pub fn bitcast(&self, dtype: DType) -> Result<Tensor> {
        let (a, b) = (self.dtype.block(), dtype.block());
        if a.0 != 1 || a != b {
            return Err(Error::shape(
                "bitcast",
                format!("{} and {} elements differ in size", self.dtype, dtype),
            ));
        }
        Ok(Tensor { dtype, ..self.clone() })
    }
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        if numel(shape) != self.numel() {
            return Err(Error::shape("reshape", format!("{:?} -> {:?}", self.shape, shape)));
        }
        Ok(Tensor {
            shape: shape.to_vec(),
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::backend::{cpu::CpuBackend, Backend};
    use crate::dtype::DType;

    /// A quantized view starts on a whole block at a word-aligned byte: an even block of 34-,
    /// 18- and 210-byte types (a stacked q/k/v weight's later rows), any block of the others.
    #[test]
    fn quantized_views_start_on_word_aligned_blocks() {
        let cpu = CpuBackend::new();
        for d in DType::QUANTS {
            let (be, bb) = d.block();
            let t = cpu.alloc(d, &[8, 4 * be]).unwrap();
            assert!(t.view(2 * be, &[be]).is_ok(), "{d}: two blocks in");
            assert_eq!(t.view(be, &[be]).is_ok(), bb % 4 == 0, "{d}: one block in");
            let e = t.view(be / 2, &[be]).unwrap_err().to_string();
            assert!(e.contains("not a whole number of blocks"), "{d}: {e}");
        }
    }
}
