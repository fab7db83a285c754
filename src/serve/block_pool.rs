//! The paged KV cache's bookkeeping on the host: a pool of fixed-size blocks with reference counts,
//! the size of one block in bytes, and the `--kv-memory` budget that decides how many blocks there
//! are. The device buffers themselves belong to the engine: block `b` holds token slots
//! `b * block_size .. (b + 1) * block_size` of every KV layer's K and V pools.
use super::ServeError;
use crate::dtype::DType;
use crate::model::config::{Config, LayerType};

/// Index of a block in the pool (the device pools are `num_blocks * block_size` token slots).
pub type BlockId = u32;

/// Tokens per block unless told otherwise.
pub const DEFAULT_BLOCK_SIZE: usize = 16;

/// Free list and reference counts of `num_blocks` blocks. A block is free (on the free list,
/// count 0), used (count > 0: that many block tables hold it), or idle: count 0 but kept off the
/// free list by the prefix cache, which owns that decision (see prefix_cache.rs).
pub struct BlockPool {
    block_size: usize,
    refs: Vec<u32>,
    /// LIFO: a block freed last is handed out first (its pages are the warmest).
    free: Vec<BlockId>,
}

impl BlockPool {
    pub fn new(num_blocks: usize, block_size: usize) -> Self {
        assert!(block_size > 0, "BlockPool::new: block_size 0");
        assert!(
            num_blocks <= u32::MAX as usize,
            "BlockPool::new: {num_blocks} blocks do not fit a u32 id"
        );
        // reversed so that a fresh pool hands out block 0 first: plans read in order in tests/logs
        BlockPool {
            block_size,
            refs: vec![0; num_blocks],
            free: (0..num_blocks as BlockId).rev().collect(),
        }
    }
    pub fn num_blocks(&self) -> usize {
        self.refs.len()
    }
    pub fn block_size(&self) -> usize {
        self.block_size
    }
    pub fn num_free(&self) -> usize {
        self.free.len()
    }
    /// Blocks whose count is > 0.
    pub fn num_used(&self) -> usize {
        self.refs.iter().filter(|&&r| r > 0).count()
    }
    pub fn refcount(&self, b: BlockId) -> u32 {
        self.refs[b as usize]
    }
    pub fn is_on_free_list(&self, b: BlockId) -> bool {
        self.free.contains(&b)
    }
    pub(super) fn free_list(&self) -> &[BlockId] {
        &self.free
    }
    /// A free block with count 1, or None when the free list is empty.
    pub fn allocate(&mut self) -> Option<BlockId> {
        let b = self.free.pop()?;
        debug_assert_eq!(self.refs[b as usize], 0, "block {b} on the free list with a count");
        self.refs[b as usize] = 1;
        Some(b)
    }
    /// One more holder of `b`. `b` must not be on the free list (a used block, or an idle one the
    /// prefix cache hands out again).
    pub fn retain(&mut self, b: BlockId) {
        debug_assert!(!self.free.contains(&b), "retain of free block {b}");
        self.refs[b as usize] += 1;
    }
    /// One holder less; returns the new count. A block reaching 0 is NOT put on the free list here:
    /// the caller either frees it (`free`) or keeps it idle in the prefix cache.
    pub fn release(&mut self, b: BlockId) -> u32 {
        let r = &mut self.refs[b as usize];
        assert!(*r > 0, "release of block {b} whose count is already 0");
        *r -= 1;
        *r
    }
    /// Puts a block with count 0 back on the free list.
    pub fn free(&mut self, b: BlockId) {
        assert_eq!(self.refs[b as usize], 0, "free of block {b} that is still held");
        debug_assert!(!self.free.contains(&b), "double free of block {b}");
        self.free.push(b);
    }
    /// Takes an idle block (count 0, not on the free list) for a new owner: count 1.
    pub(super) fn take_idle(&mut self, b: BlockId) {
        assert_eq!(self.refs[b as usize], 0, "take_idle of block {b} that is still held");
        self.refs[b as usize] = 1;
    }
}

/// What one block of the device KV pools costs: every KV layer holds a K and a V page of
/// `block_size x kv_heads x head_dim` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvGeometry {
    /// Layers with a KV cache (the full-attention layers of a hybrid model, every layer otherwise).
    pub layers: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub dtype: DType,
    pub block_size: usize,
}

impl KvGeometry {
    /// The geometry of a model's KV cache in `dtype` (f16, bf16 or f32: anything else is refused by
    /// name). Qwen3.5's linear-attention layers keep recurrent state, not KV, so they cost no block
    /// bytes.
    pub fn from_config(cfg: &Config, dtype: DType, block_size: usize) -> Result<Self, ServeError> {
        if !dtype.is_float() {
            return Err(ServeError::KvDtype(dtype.name().to_string()));
        }
        if block_size == 0 {
            return Err(ServeError::Config {
                field: "block_size",
                reason: "must be at least 1".into(),
            });
        }
        let layers = match &cfg.hybrid {
            Some(h) => h.layer_types.iter().filter(|&&t| t == LayerType::Full).count(),
            None => cfg.num_hidden_layers,
        };
        Ok(KvGeometry {
            layers,
            kv_heads: cfg.num_key_value_heads,
            head_dim: cfg.head_dim,
            dtype,
            block_size,
        })
    }
    /// layers x 2 (K and V) x block_size x kv_heads x head_dim x dtype size.
    pub fn bytes_per_block(&self) -> u64 {
        (self.layers * 2 * self.block_size * self.kv_heads * self.head_dim * self.dtype.size()) as u64
    }
    /// KV bytes one token costs across the layers.
    pub fn bytes_per_token(&self) -> u64 {
        self.bytes_per_block() / self.block_size as u64
    }
    /// How many whole blocks `budget` bytes hold; a budget that holds none is refused with both
    /// numbers, so the user sees what to raise.
    pub fn num_blocks(&self, budget: u64) -> Result<usize, ServeError> {
        let per = self.bytes_per_block();
        let n = budget.checked_div(per).unwrap_or(0);
        if n == 0 {
            return Err(ServeError::KvTooSmall {
                budget,
                block_bytes: per,
            });
        }
        Ok(usize::try_from(n.min(u32::MAX as u64)).unwrap_or(u32::MAX as usize))
    }
}

/// `--kv-dtype f16|bf16|f32`.
pub fn parse_kv_dtype(s: &str) -> Result<DType, ServeError> {
    match DType::parse(s) {
        Some(d) if d.is_float() => Ok(d),
        _ => Err(ServeError::KvDtype(s.to_string())),
    }
}

/// `--kv-memory`: a byte count or a fraction of the memory the engine has for the KV cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KvMemory {
    Bytes(u64),
    /// in (0, 1]
    Fraction(f64),
}

/// Why a `--kv-memory` value was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum KvMemoryError {
    #[error("--kv-memory: empty value (give bytes like 4GiB or 512MiB, or a fraction like 0.9)")]
    Empty,
    #[error("--kv-memory {0:?}: not a number (give bytes like 4GiB or 512MiB, or a fraction like 0.9)")]
    BadNumber(String),
    #[error("--kv-memory {value:?}: unknown unit {unit:?} (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)")]
    UnknownUnit { value: String, unit: String },
    #[error("--kv-memory {0:?}: a fraction must be in (0, 1]")]
    FractionOutOfRange(String),
    #[error("--kv-memory {0:?}: a byte count must be a whole number above 0")]
    BadBytes(String),
    #[error("--kv-memory {0:?}: more bytes than 2^64")]
    Overflow(String),
    #[error("--kv-memory {0:?} is a fraction, but the engine does not know the device's memory: give bytes")]
    UnknownDeviceMemory(String),
}

impl KvMemory {
    /// "4GiB", "512MiB", "1.5GB", "1073741824" (bytes), "0.9" (a fraction: has a point, no unit,
    /// in (0, 1]). Units are case-insensitive; KiB.. are powers of 1024, KB.. of 1000.
    pub fn parse(s: &str) -> Result<KvMemory, KvMemoryError> {
        let t = s.trim();
        if t.is_empty() {
            return Err(KvMemoryError::Empty);
        }
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let (num, unit) = (&t[..split], t[split..].trim());
        let x: f64 = num.parse().map_err(|_| KvMemoryError::BadNumber(s.to_string()))?;
        if unit.is_empty() && num.contains('.') {
            return if x > 0.0 && x <= 1.0 {
                Ok(KvMemory::Fraction(x))
            } else {
                Err(KvMemoryError::FractionOutOfRange(s.to_string()))
            };
        }
        let mult: f64 = match unit.to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "kib" => 1024.0,
            "mib" => 1024f64.powi(2),
            "gib" => 1024f64.powi(3),
            "tib" => 1024f64.powi(4),
            "kb" => 1e3,
            "mb" => 1e6,
            "gb" => 1e9,
            "tb" => 1e12,
            _ => {
                return Err(KvMemoryError::UnknownUnit {
                    value: s.to_string(),
                    unit: unit.to_string(),
                })
            }
        };
        let bytes = (x * mult).floor();
        if bytes >= u64::MAX as f64 {
            return Err(KvMemoryError::Overflow(s.to_string()));
        }
        // "0.5B" or "0" would be no memory at all
        if bytes < 1.0 || (mult == 1.0 && x.fract() != 0.0) {
            return Err(KvMemoryError::BadBytes(s.to_string()));
        }
        Ok(KvMemory::Bytes(bytes as u64))
    }
    /// The byte budget: a fraction is taken of `available` (the device memory the engine can give
    /// the KV cache, after weights and workspace; None when the device does not say).
    pub fn resolve(self, available: Option<u64>) -> Result<u64, KvMemoryError> {
        match self {
            KvMemory::Bytes(b) => Ok(b),
            KvMemory::Fraction(f) => match available {
                Some(a) => Ok((a as f64 * f).floor() as u64),
                None => Err(KvMemoryError::UnknownDeviceMemory(f.to_string())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocate_retain_release_free() {
        let mut p = BlockPool::new(3, 16);
        let a = p.allocate().unwrap();
        let b = p.allocate().unwrap();
        assert_eq!((a, b), (0, 1));
        p.retain(a);
        assert_eq!(p.refcount(a), 2);
        assert_eq!(p.release(a), 1);
        assert_eq!(p.release(a), 0);
        assert_eq!(p.num_used(), 1);
        p.free(a);
        assert_eq!(p.num_free(), 2);
        assert_eq!(p.allocate(), Some(a), "the block freed last is handed out first");
        assert!(p.allocate().is_some());
        assert_eq!(p.allocate(), None, "an empty pool says so");
    }

    #[test]
    #[should_panic(expected = "already 0")]
    fn release_below_zero_panics() {
        let mut p = BlockPool::new(1, 16);
        let a = p.allocate().unwrap();
        p.release(a);
        p.release(a);
    }

    #[test]
    fn parse_kv_memory() {
        assert_eq!(KvMemory::parse("4GiB"), Ok(KvMemory::Bytes(4 << 30)));
        assert_eq!(KvMemory::parse("512MiB"), Ok(KvMemory::Bytes(512 << 20)));
        assert_eq!(KvMemory::parse(" 2 gb "), Ok(KvMemory::Bytes(2_000_000_000)));
        assert_eq!(KvMemory::parse("1.5KiB"), Ok(KvMemory::Bytes(1536)));
        assert_eq!(KvMemory::parse("1073741824"), Ok(KvMemory::Bytes(1 << 30)));
        assert_eq!(KvMemory::parse("0.9"), Ok(KvMemory::Fraction(0.9)));
        assert_eq!(KvMemory::parse("1.0"), Ok(KvMemory::Fraction(1.0)));
        assert_eq!(KvMemory::parse(""), Err(KvMemoryError::Empty));
        assert!(matches!(KvMemory::parse("GiB"), Err(KvMemoryError::BadNumber(_))));
        assert!(matches!(KvMemory::parse("1.2.3"), Err(KvMemoryError::BadNumber(_))));
        assert!(matches!(KvMemory::parse("-1GiB"), Err(KvMemoryError::BadNumber(_))));
        assert!(matches!(KvMemory::parse("4XB"), Err(KvMemoryError::UnknownUnit { .. })));
        assert!(matches!(
            KvMemory::parse("1.5"),
            Err(KvMemoryError::FractionOutOfRange(_))
        ));
        assert!(matches!(
            KvMemory::parse("0.0"),
            Err(KvMemoryError::FractionOutOfRange(_))
        ));
        assert!(matches!(KvMemory::parse("0"), Err(KvMemoryError::BadBytes(_))));
        assert!(matches!(
            KvMemory::parse("99999999TiB"),
            Err(KvMemoryError::Overflow(_))
        ));
        let e = KvMemory::parse("4XB").unwrap_err().to_string();
        assert!(e.contains("--kv-memory") && e.contains("XB"), "{e}");
    }

    #[test]
    fn resolve_fraction() {
        assert_eq!(KvMemory::Fraction(0.5).resolve(Some(1000)), Ok(500));
        assert_eq!(KvMemory::Bytes(7).resolve(None), Ok(7));
        assert!(matches!(
            KvMemory::Fraction(0.5).resolve(None),
            Err(KvMemoryError::UnknownDeviceMemory(_))
        ));
    }

    fn golden_config(name: &str) -> Config {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("goldens/{name}/model/config.json"));
        Config::from_file(&p).unwrap()
    }

    #[test]
    fn geometry_from_configs() {
        // qwen3_5-tiny: 4 layers, one of them full attention; 2 KV heads of 64
        let g = KvGeometry::from_config(&golden_config("qwen3_5-tiny"), DType::F16, 16).unwrap();
        assert_eq!((g.layers, g.kv_heads, g.head_dim), (1, 2, 64));
        assert_eq!(g.bytes_per_block(), 2 * 16 * 2 * 64 * 2);
        let c = golden_config("qwen3-tiny");
        let g = KvGeometry::from_config(&c, DType::F32, 16).unwrap();
        assert_eq!(g.layers, c.num_hidden_layers);
        assert!(matches!(
            KvGeometry::from_config(&c, DType::Q8_0, 16),
            Err(ServeError::KvDtype(_))
        ));
    }

    #[test]
    fn block_bytes_and_count() {
        // Qwen3-0.6B: 28 layers, 8 KV heads of 128, f16: 28*2*16*8*128*2 = 1,835,008 bytes a block
        let g = KvGeometry {
            layers: 28,
            kv_heads: 8,
            head_dim: 128,
            dtype: DType::F16,
            block_size: 16,
        };
        assert_eq!(g.bytes_per_block(), 1_835_008);
        assert_eq!(g.bytes_per_token(), 114_688);
        assert_eq!(g.num_blocks(4 << 30).unwrap(), (4u64 << 30) as usize / 1_835_008);
        assert_eq!(
            g.num_blocks(1000),
            Err(ServeError::KvTooSmall {
                budget: 1000,
                block_bytes: 1_835_008
            })
        );
        assert_eq!(parse_kv_dtype("bf16"), Ok(DType::BF16));
        assert!(matches!(parse_kv_dtype("q8_0"), Err(ServeError::KvDtype(_))));
    }
}
