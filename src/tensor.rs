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
    /// A view of `shape` starting `elem_offset` elements into this tensor's region.
    pub fn view(&self, elem_offset: usize, shape: &[usize]) -> Result<Tensor> {
        let off = self.offset + elem_offset;
        let (be, bb) = self.dtype.block();
        if be > 1 && (off % be != 0 || bb % 4 != 0 && off > 0) {
            return Err(Error::shape(
                "view",
                format!(
                    "{} view offset {off} is not a whole number of word-aligned blocks",
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
