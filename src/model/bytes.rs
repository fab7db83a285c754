//! The bytes of a model file: mapped from disk (the path loaders), or owned (the from-bytes entry
//! points the fuzz targets and embedders use). Readers see `&[u8]` either way.
use std::ops::Deref;

pub enum FileBytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Map(m) => m,
            FileBytes::Owned(v) => v,
        }
    }
}

/// Maps `path` read-only; errors name the file.
pub fn map_file(path: &std::path::Path) -> crate::error::Result<FileBytes> {
    let ferr = |d: String| crate::error::Error::File {
        path: path.display().to_string(),
        detail: d,
    };
    let file = std::fs::File::open(path).map_err(|e| ferr(e.to_string()))?;
    // SAFETY: the file is opened read-only; a concurrent writer could change the bytes under us,
    // which at worst gives wrong weights, never memory unsafety in this read-only view.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| ferr(format!("mmap: {e}")))?;
    Ok(FileBytes::Map(map))
}
