//! GGUF files (versions 2 and 3, little endian) by mmap. Everything is checked before a tensor is
//! handed out: magic, version, counts against the bytes left (so a lying count is an error, never
//! a huge allocation), every metadata value, tensor dims and types, whole blocks along each row,
//! aligned offsets inside the file, no overlaps, no duplicate names or keys. Every error names
//! the file and the key or tensor.
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

/// One metadata value, as typed in the file (type ids 0..=12 in this order:
/// u8 i8 u16 i16 u32 i32 f32 bool string array u64 i64 f64).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    Array(Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    /// The type as an error message names it, e.g. `u32`, `string`, `array of string`.
    pub fn type_name(&self) -> String {
        match self {
            Value::U8(_) => "u8".into(),
            Value::I8(_) => "i8".into(),
            Value::U16(_) => "u16".into(),
            Value::I16(_) => "i16".into(),
            Value::U32(_) => "u32".into(),
            Value::I32(_) => "i32".into(),
            Value::F32(_) => "f32".into(),
            Value::Bool(_) => "bool".into(),
            Value::Str(_) => "string".into(),
            Value::Array(a) => match a.first() {
                Some(v) => format!("array of {} ({} entries)", v.type_name(), a.len()),
                None => "empty array".into(),
            },
            Value::U64(_) => "u64".into(),
            Value::I64(_) => "i64".into(),
            Value::F64(_) => "f64".into(),
        }
    }

    /// An integer value of any integer type, widened.
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            Value::U8(v) => v as i128,
            Value::I8(v) => v as i128,
            Value::U16(v) => v as i128,
            Value::I16(v) => v as i128,
            Value::U32(v) => v as i128,
            Value::I32(v) => v as i128,
            Value::U64(v) => v as i128,
            Value::I64(v) => v as i128,
            _ => return None,
        })
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) if s.len() > 60 => write!(f, "{:?}...", s.chars().take(40).collect::<String>()),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Array(a) => write!(f, "[{} entries]", a.len()),
            Value::F32(v) => write!(f, "{v}"),
            Value::F64(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            v => write!(f, "{}", v.as_i128().unwrap_or_default()),
        }
    }
}

/// A tensor's place in the file.
#[derive(Clone, Debug)]
pub struct GgufTensor {
    pub name: String,
    pub dtype: DType,
    /// Row-major: the file's ggml dims reversed, so a matrix of N rows of K is [N, K].
    pub shape: Vec<usize>,
    /// Absolute byte range in the file.
    pub start: usize,
    pub end: usize,
}

impl GgufTensor {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

pub struct Gguf {
    pub path: PathBuf,
    pub version: u32,
    pub metadata: BTreeMap<String, Value>,
    /// In file order.
    pub tensors: Vec<GgufTensor>,
    /// `general.alignment`, or 32.
    pub alignment: usize,
    /// Absolute offset of the data section (tensor offsets are relative to it).
    pub data_start: usize,
    index: HashMap<String, usize>,
    map: super::bytes::FileBytes,
}

/// The name ggml gives a type id (whether or not this build can load it).
pub fn ggml_type_name(t: u32) -> Option<&'static str> {
    const NAMES: [&str; 40] = [
        "F32",
        "F16",
        "Q4_0",
        "Q4_1",
        "Q4_2",
        "Q4_3",
        "Q5_0",
        "Q5_1",
        "Q8_0",
        "Q8_1",
        "Q2_K",
        "Q3_K",
        "Q4_K",
        "Q5_K",
        "Q6_K",
        "Q8_K",
        "IQ2_XXS",
        "IQ2_XS",
        "IQ3_XXS",
        "IQ1_S",
        "IQ4_NL",
        "IQ3_S",
        "IQ2_S",
        "IQ4_XS",
        "I8",
        "I16",
        "I32",
        "I64",
        "F64",
        "IQ1_M",
        "BF16",
        "Q4_0_4_4",
        "Q4_0_4_8",
        "Q4_0_8_8",
        "TQ1_0",
        "TQ2_0",
        "IQ4_NL_4_4",
        "IQ4_NL_4_8",
        "IQ4_NL_8_8",
        "MXFP4",
    ];
    NAMES.get(t as usize).copied()
}

pub(crate) fn ferr(path: &Path, detail: impl Into<String>) -> Error {
    Error::File {
        path: path.display().to_string(),
        detail: detail.into(),
    }
}

const MAX_DEPTH: usize = 8;
/// Metadata array entries decoded in all. Each becomes a `Value` (32 bytes) however small its
/// encoding (1 byte for a u8), so counts checked only against the file's bytes would let a legal
/// 200 MiB array cost 6.7 GB. The largest real vocabularies (~262k tokens with their scores,
/// types and merges) use about a million; 2^23 (~270 MB of values) leaves room eight times over.
pub const MAX_META_ENTRIES: usize = 1 << 23;
const MAX_DIMS: usize = 4;

/// Bounds-checked little-endian reads over the mapped bytes.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    path: &'a Path,
    /// metadata array entries still allowed (MAX_META_ENTRIES at the start)
    entries_left: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }
    fn take(&mut self, n: usize, what: &dyn Fn() -> String) -> Result<&'a [u8]> {
        if n > self.left() {
            return Err(ferr(
                self.path,
                format!(
                    "truncated: {} needs {n} bytes at offset {} but the file is {} bytes",
                    what(),
                    self.pos,
                    self.buf.len()
                ),
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?); // take returns exactly N bytes or an error
        Ok(a)
    }
    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32> {
        Ok(u32::from_le_bytes(self.arr(what)?))
    }
    fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64> {
        Ok(u64::from_le_bytes(self.arr(what)?))
    }
    /// A count that must fit: `count * min_size` bytes must remain.
    fn count(&mut self, min_size: usize, what: &dyn Fn() -> String) -> Result<usize> {
        let n = self.u64(what)?;
        let need = (n as u128) * (min_size as u128);
        if need > self.left() as u128 {
            return Err(ferr(
                self.path,
                format!(
                    "{} is {n}, which needs at least {need} bytes, but only {} bytes are left in the file",
                    what(),
                    self.left()
                ),
            ));
        }
        Ok(n as usize)
    }
    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String> {
        let n = self.count(1, &|| format!("{} (string length)", what()))?;
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|e| ferr(self.path, format!("{} is not valid UTF-8: {e}", what())))
    }
}

/// Smallest encoding of a value of this type id (what an array entry needs at least).
fn min_size(t: u32) -> Option<usize> {
    Some(match t {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        8 | 10..=12 => 8,
        9 => 12,
        _ => return None,
    })
}

fn read_value(c: &mut Cursor, t: u32, depth: usize, what: &dyn Fn() -> String) -> Result<Value> {
    Ok(match t {
        0 => Value::U8(c.arr::<1>(what)?[0]),
        1 => Value::I8(c.arr::<1>(what)?[0] as i8),
        2 => Value::U16(u16::from_le_bytes(c.arr(what)?)),
        3 => Value::I16(i16::from_le_bytes(c.arr(what)?)),
        4 => Value::U32(c.u32(what)?),
        5 => Value::I32(i32::from_le_bytes(c.arr(what)?)),
        6 => Value::F32(f32::from_le_bytes(c.arr(what)?)),
        7 => match c.arr::<1>(what)?[0] {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            b => return Err(ferr(c.path, format!("{}: bool byte is {b}, not 0 or 1", what()))),
        },
        8 => Value::Str(c.string(what)?),
        9 => {
            if depth >= MAX_DEPTH {
                return Err(ferr(
                    c.path,
                    format!("{}: arrays nested deeper than {MAX_DEPTH}", what()),
                ));
            }
            let et = c.u32(&|| format!("{} (array element type)", what()))?;
            let min = min_size(et).ok_or_else(|| {
                ferr(
                    c.path,
                    format!("{}: unknown array element type {et} (known: 0..=12)", what()),
                )
            })?;
            let n = c.count(min, &|| format!("{} (array count)", what()))?;
            c.entries_left = c.entries_left.checked_sub(n).ok_or_else(|| {
                ferr(
                    c.path,
                    format!(
                        "{}: {n} entries take the metadata past {MAX_META_ENTRIES} array entries in all",
                        what()
                    ),
                )
            })?;
            let mut v = Vec::with_capacity(n);
            for i in 0..n {
                v.push(read_value(c, et, depth + 1, &|| format!("{}[{i}]", what()))?);
            }
            Value::Array(v)
        }
        10 => Value::U64(c.u64(what)?),
        11 => Value::I64(i64::from_le_bytes(c.arr(what)?)),
        12 => Value::F64(f64::from_le_bytes(c.arr(what)?)),
        _ => {
            return Err(ferr(
                c.path,
                format!("{}: unknown value type {t} (known: 0..=12)", what()),
            ))
        }
    })
}

impl Gguf {
    pub fn open(path: &Path) -> Result<Gguf> {
        let meta = std::fs::metadata(path).map_err(|e| ferr(path, e.to_string()))?;
        if meta.is_dir() {
            return Err(ferr(path, "is a directory, not a GGUF file"));
        }
        if meta.len() < 24 {
            return Err(ferr(
                path,
                format!(
                    "truncated: {} bytes, a GGUF header (magic, version, counts) is 24",
                    meta.len()
                ),
            ));
        }
        Self::from_file_bytes(path, super::bytes::map_file(path)?)
    }

    /// A GGUF file from its bytes (`path` names it in errors): the same checks as `open`.
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<Gguf> {
        Self::from_file_bytes(path, super::bytes::FileBytes::Owned(bytes))
    }

    fn from_file_bytes(path: &Path, map: super::bytes::FileBytes) -> Result<Gguf> {
        let (version, metadata, tensors, alignment, data_start) = parse(path, &map)?;
        let index = tensors.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        Ok(Gguf {
            path: path.to_path_buf(),
            version,
            metadata,
            tensors,
            alignment,
            data_start,
            index,
            map,
        })
    }

    fn err(&self, detail: impl Into<String>) -> Error {
        ferr(&self.path, detail)
    }

    pub fn tensor(&self, name: &str) -> Option<&GgufTensor> {
        self.index.get(name).map(|&i| &self.tensors[i])
    }

    /// The tensor's info and raw bytes, or an error naming the file and the tensor.
    pub fn get(&self, name: &str) -> Result<(&GgufTensor, &[u8])> {
        let t = self
            .tensor(name)
            .ok_or_else(|| self.err(format!("tensor `{name}` is missing")))?;
        Ok((t, &self.map[t.start..t.end]))
    }

    pub fn meta(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    fn need(&self, key: &str) -> Result<&Value> {
        self.meta(key)
            .ok_or_else(|| self.err(format!("metadata key `{key}` is missing")))
    }

    fn wrong(&self, key: &str, want: &str, v: &Value) -> Error {
        self.err(format!(
            "metadata key `{key}`: expected {want}, found {} {v}",
            v.type_name()
        ))
    }

    /// Any integer value that fits in u32.
    pub fn meta_u32(&self, key: &str) -> Result<u32> {
        let v = self.need(key)?;
        v.as_i128()
            .and_then(|i| u32::try_from(i).ok())
            .ok_or_else(|| self.wrong(key, "an integer that fits in u32", v))
    }

    pub fn meta_f32(&self, key: &str) -> Result<f32> {
        match self.need(key)? {
            Value::F32(x) => Ok(*x),
            Value::F64(x) => Ok(*x as f32),
            v => Err(self.wrong(key, "f32", v)),
        }
    }

    pub fn meta_str(&self, key: &str) -> Result<&str> {
        match self.need(key)? {
            Value::Str(s) => Ok(s),
            v => Err(self.wrong(key, "string", v)),
        }
    }

    pub fn meta_bool(&self, key: &str) -> Result<bool> {
        match self.need(key)? {
            Value::Bool(b) => Ok(*b),
            v => Err(self.wrong(key, "bool", v)),
        }
    }

    pub fn meta_str_array(&self, key: &str) -> Result<Vec<&str>> {
        let v = self.need(key)?;
        let Value::Array(a) = v else {
            return Err(self.wrong(key, "array of string", v));
        };
        a.iter()
            .enumerate()
            .map(|(i, e)| match e {
                Value::Str(s) => Ok(s.as_str()),
                e => Err(self.err(format!(
                    "metadata key `{key}`: expected array of string, entry {i} is {} {e}",
                    e.type_name()
                ))),
            })
            .collect()
    }

    /// An array of integers that each fit in i32.
    pub fn meta_i32_array(&self, key: &str) -> Result<Vec<i32>> {
        let v = self.need(key)?;
        let Value::Array(a) = v else {
            return Err(self.wrong(key, "array of i32", v));
        };
        a.iter()
            .enumerate()
            .map(|(i, e)| {
                e.as_i128().and_then(|x| i32::try_from(x).ok()).ok_or_else(|| {
                    self.err(format!(
                        "metadata key `{key}`: expected array of i32, entry {i} is {} {e}",
                        e.type_name()
                    ))
                })
            })
            .collect()
    }

    /// `general.architecture` (e.g. `llama`).
    pub fn architecture(&self) -> Result<&str> {
        self.meta_str("general.architecture")
    }
}

type Parsed = (u32, BTreeMap<String, Value>, Vec<GgufTensor>, usize, usize);

fn parse(path: &Path, buf: &[u8]) -> Result<Parsed> {
    let mut c = Cursor {
        buf,
        pos: 0,
        path,
        entries_left: MAX_META_ENTRIES,
    };
    let magic = c.arr::<4>(&|| "magic".into())?;
    if &magic != b"GGUF" {
        return Err(ferr(
            path,
            format!(
                "bad magic {magic:02x?} ({:?}): not a GGUF file",
                String::from_utf8_lossy(&magic)
            ),
        ));
    }
    let version = c.u32(&|| "version".into())?;
    match version {
        2 | 3 => {}
        1 => {
            return Err(ferr(
                path,
                "GGUF version 1 is not supported (32-bit counts; re-convert the model to version 3)",
            ))
        }
        v if v.swap_bytes() <= 3 => {
            return Err(ferr(
                path,
                format!(
                    "GGUF version {v} reads as {} byte-swapped: a big-endian file, only little-endian is supported",
                    v.swap_bytes()
                ),
            ))
        }
        v => {
            return Err(ferr(
                path,
                format!("GGUF version {v} is not supported (this build reads versions 2 and 3)"),
            ))
        }
    }
    // A tensor info is at least 8 (name length) + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset).
    let n_tensors = c.count(32, &|| "tensor count".into())?;
    let n_kv = c.count(13, &|| "metadata key/value count".into())?;

    let mut metadata = BTreeMap::new();
    for i in 0..n_kv {
        let key = c.string(&|| format!("metadata key #{i}"))?;
        let kw = || format!("metadata key `{key}`");
        let t = c.u32(&|| format!("{} (value type)", kw()))?;
        let v = read_value(&mut c, t, 0, &kw)?;
        if metadata.insert(key.clone(), v).is_some() {
            return Err(ferr(path, format!("metadata key `{key}` appears twice")));
        }
    }
    let alignment = match metadata.get("general.alignment") {
        None => 32,
        Some(v) => match v.as_i128() {
            Some(a) if a > 0 && a <= 1 << 30 && (a as u64).is_power_of_two() => a as usize,
            _ => {
                return Err(ferr(
                    path,
                    format!(
                        "metadata key `general.alignment`: expected a power of two, found {} {v}",
                        v.type_name()
                    ),
                ))
            }
        },
    };

    let mut infos = Vec::new();
    let mut seen = HashMap::new();
    for i in 0..n_tensors {
        let name = c.string(&|| format!("tensor #{i} name"))?;
        let tw = || format!("tensor `{name}`");
        let bad = |d: String| ferr(path, format!("tensor `{name}`: {d}"));
        if seen.insert(name.clone(), i).is_some() {
            return Err(bad("the name appears twice".into()));
        }
        let n_dims = c.u32(&|| format!("{} n_dims", tw()))? as usize;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(bad(format!("n_dims is {n_dims}, must be 1 to {MAX_DIMS}")));
        }
        let mut ne = Vec::with_capacity(n_dims);
        for d in 0..n_dims {
            let v = c.u64(&|| format!("{} dim {d}", tw()))?;
            if v == 0 {
                return Err(bad(format!("dim {d} (ggml ne{d}) is 0")));
            }
            ne.push(v);
        }
        let numel = ne
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .filter(|&n| n <= i64::MAX as u64 && usize::try_from(n).is_ok());
        let numel = numel.ok_or_else(|| bad(format!("dims {ne:?} overflow the element count")))? as usize;
        let ty = c.u32(&|| format!("{} type", tw()))?;
        let dtype = match (ggml_type_name(ty), DType::from_ggml_type(ty)) {
            (Some(_), Some(d)) => d,
            (Some(n), None) => return Err(bad(format!("ggml type {ty} ({n}) is not supported by this build"))),
            (None, _) => return Err(bad(format!("ggml type {ty} is not a known ggml type"))),
        };
        let (be, _) = dtype.block();
        if ne[0] % be as u64 != 0 {
            return Err(bad(format!(
                "row length (ne0) {} is not a multiple of the {dtype} block size {be}",
                ne[0]
            )));
        }
        let offset = c.u64(&|| format!("{} offset", tw()))?;
        if offset % alignment as u64 != 0 {
            return Err(bad(format!(
                "offset {offset} is not a multiple of the alignment {alignment}"
            )));
        }
        let size = dtype.nbytes(numel) as u64;
        let shape = ne.iter().rev().map(|&d| d as usize).collect();
        infos.push((name, dtype, shape, offset, size));
    }
    let data_start = c.pos.div_ceil(alignment) * alignment;
    let len = buf.len() as u64;
    let mut tensors = Vec::with_capacity(infos.len());
    for (name, dtype, shape, offset, size) in infos {
        let end = (data_start as u64)
            .checked_add(offset)
            .and_then(|s| s.checked_add(size));
        if end.is_none_or(|e| e > len) {
            let avail = len.saturating_sub(data_start as u64);
            return Err(ferr(path, format!("tensor `{name}`: data [{offset}, {offset} + {size}) runs past the end of the file (data section is {avail} bytes)")));
        }
        let start = data_start + offset as usize;
        tensors.push(GgufTensor {
            name,
            dtype,
            shape,
            start,
            end: start + size as usize,
        });
    }
    let mut order: Vec<&GgufTensor> = tensors.iter().collect();
    order.sort_by_key(|t| (t.start, t.end));
    for w in order.windows(2) {
        if w[1].start < w[0].end {
            return Err(ferr(
                path,
                format!("tensors `{}` and `{}` overlap", w[0].name, w[1].name),
            ));
        }
    }
    Ok((version, metadata, tensors, alignment, data_start))
}
