//! safetensors files by mmap (single file or a sharded index). The header is checked before any
//! tensor is touched: header length inside the file, valid JSON, known dtypes, offsets inside the
//! data section, sizes that match the shape, no overlaps. Every error names the file and tensor.
use super::bytes::{map_file, FileBytes};
use crate::dtype::DType;
use crate::error::{Error, Result};
use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, Visitor};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub struct TensorInfo {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub file: usize,
    /// absolute byte range in the file
    pub start: usize,
    pub end: usize,
}

pub struct SafeTensors {
    pub(crate) files: Vec<(PathBuf, FileBytes)>,
    pub tensors: HashMap<String, TensorInfo>,
}

fn ferr(path: &Path, detail: impl Into<String>) -> Error {
    Error::File {
        path: path.display().to_string(),
        detail: detail.into(),
    }
}

fn dtype_of(s: &str) -> Option<DType> {
    match s {
        "F32" => Some(DType::F32),
        "F16" => Some(DType::F16),
        "BF16" => Some(DType::BF16),
        "I32" => Some(DType::I32),
        "U32" => Some(DType::U32),
        _ => None,
    }
}

impl SafeTensors {
    /// Opens `dir/model.safetensors`, or every shard named by `dir/model.safetensors.index.json`.
    pub fn open_dir(dir: &Path) -> Result<SafeTensors> {
        let index = dir.join("model.safetensors.index.json");
        let files: Vec<PathBuf> = if index.exists() {
            let text = std::fs::read(&index).map_err(|e| ferr(&index, e.to_string()))?;
            Self::shard_names(&index, &text)?
                .into_iter()
                .map(|n| dir.join(n))
                .collect()
        } else {
            let single = dir.join("model.safetensors");
            if !single.exists() {
                return Err(ferr(dir, "no model.safetensors or model.safetensors.index.json"));
            }
            vec![single]
        };
        let mut st = SafeTensors {
            files: Vec::new(),
            tensors: HashMap::new(),
        };
        for f in files {
            st.add_file(&f)?;
        }
        Ok(st)
    }

    /// The shard file names model.safetensors.index.json names (`path`, its bytes), each once,
    /// sorted. A name must be a plain relative path inside the model directory: no absolute path,
    /// no `..`, so an index cannot make the loader open `/dev/zero` or a file beside the model.
    /// (Confined by name, not by resolving links: the Hugging Face cache's shards are symlinks
    /// into `../../blobs/`.)
    pub fn shard_names(path: &Path, bytes: &[u8]) -> Result<Vec<String>> {
        let v: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| ferr(path, format!("not valid JSON: {e}")))?;
        let map = v
            .get("weight_map")
            .and_then(|m| m.as_object())
            .ok_or_else(|| ferr(path, "field `weight_map` missing"))?;
        let mut names = Vec::new();
        for (tensor, shard) in map {
            let bad = |d: &str| ferr(path, format!("field `weight_map`: tensor `{tensor}`: {d}"));
            let name = shard
                .as_str()
                .ok_or_else(|| bad(&format!("expected a shard file name, got {shard}")))?;
            let plain = !name.is_empty()
                && Path::new(name)
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !plain {
                return Err(bad(&format!(
                    "shard `{name}` is not a file name inside the model directory (absolute, `..` or empty)"
                )));
            }
            names.push(name.to_string());
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    pub fn add_file(&mut self, path: &Path) -> Result<()> {
        self.add_bytes(path, map_file(path)?)
    }

    /// A safetensors file from its bytes (`path` names it in errors): the same checks as a file.
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<SafeTensors> {
        let mut st = SafeTensors {
            files: Vec::new(),
            tensors: HashMap::new(),
        };
        st.add_bytes(path, FileBytes::Owned(bytes))?;
        Ok(st)
    }

    pub fn add_bytes(&mut self, path: &Path, map: FileBytes) -> Result<()> {
        let len = map.len();
        if len < 8 {
            return Err(ferr(
                path,
                format!("truncated: {len} bytes, the 8-byte header length is missing"),
            ));
        }
        let hlen = u64::from_le_bytes([map[0], map[1], map[2], map[3], map[4], map[5], map[6], map[7]]);
        if hlen > (len - 8) as u64 {
            return Err(ferr(
                path,
                format!("header length {hlen} runs past the end of the file ({len} bytes)"),
            ));
        }
        let hlen = hlen as usize;
        let header: Header = serde_json::from_slice(&map[8..8 + hlen]).map_err(|e| {
            if e.is_data() {
                ferr(path, format!("header: {e}"))
            } else {
                ferr(path, format!("header is not valid JSON: {e}"))
            }
        })?;
        let mut obj = header.0;
        // name order, as the map this replaced iterated (the first error reported stays the same)
        obj.sort_by(|a, b| a.0.cmp(&b.0));
        let data0 = 8 + hlen;
        let fidx = self.files.len();
        let mut ranges: Vec<(usize, usize, String)> = Vec::new();
        for (name, t) in &obj {
            if name == "__metadata__" {
                continue;
            }
            let bad = |d: String| ferr(path, format!("tensor `{name}`: {d}"));
            let ds = t.get("dtype").and_then(|x| x.as_str()).ok_or_else(|| {
                bad(format!(
                    "dtype missing or not a string: {}",
                    t.get("dtype").map_or("absent".into(), |d| d.to_string())
                ))
            })?;
            let dtype = dtype_of(ds).ok_or_else(|| bad(format!("unsupported dtype {ds}")))?;
            let shape: Vec<usize> = t
                .get("shape")
                .and_then(|x| x.as_array())
                .ok_or_else(|| bad("shape missing or not a list".into()))?
                .iter()
                .map(|d| {
                    d.as_u64()
                        .map(|d| d as usize)
                        .ok_or_else(|| bad("shape entries must be integers".into()))
                })
                .collect::<Result<_>>()?;
            let offs = t
                .get("data_offsets")
                .and_then(|x| x.as_array())
                .filter(|a| a.len() == 2)
                .ok_or_else(|| bad("data_offsets must be [begin, end]".into()))?;
            let (b, e) = match (offs[0].as_u64(), offs[1].as_u64()) {
                (Some(b), Some(e)) => (b as usize, e as usize),
                _ => return Err(bad("data_offsets must be integers".into())),
            };
            if b > e {
                return Err(bad(format!("data_offsets [{b}, {e}] run backwards")));
            }
            if data0.checked_add(e).is_none_or(|end| end > len) {
                return Err(bad(format!(
                    "data_offsets [{b}, {e}] run past the end of the file (data section is {} bytes)",
                    len - data0
                )));
            }
            let want = shape
                .iter()
                .try_fold(dtype.size(), |a, &d| a.checked_mul(d))
                .ok_or_else(|| bad("shape overflows".into()))?;
            if e - b != want {
                return Err(bad(format!(
                    "{} bytes for shape {shape:?} {dtype} which needs {want}",
                    e - b
                )));
            }
            if self.tensors.contains_key(name) {
                return Err(bad("appears in two files".into()));
            }
            ranges.push((b, e, name.clone()));
            self.tensors.insert(
                name.clone(),
                TensorInfo {
                    dtype,
                    shape,
                    file: fidx,
                    start: data0 + b,
                    end: data0 + e,
                },
            );
        }
        ranges.sort();
        for w in ranges.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(ferr(path, format!("tensors `{}` and `{}` overlap", w[0].2, w[1].2)));
            }
        }
        self.files.push((path.to_path_buf(), map));
        Ok(())
    }

    pub fn path_of(&self, name: &str) -> String {
        self.tensors
            .get(name)
            .map(|t| self.files[t.file].0.display().to_string())
            .unwrap_or_else(|| "safetensors".into())
    }

    /// The tensor's info and raw bytes, or an error naming the tensor.
    pub fn get(&self, name: &str) -> Result<(&TensorInfo, &[u8])> {
        let t = self.tensors.get(name).ok_or_else(|| {
            let where_ = self
                .files
                .iter()
                .map(|f| f.0.display().to_string())
                .collect::<Vec<_>>()
                .join(", ");
            Error::File {
                path: where_,
                detail: format!("tensor `{name}` is missing"),
            }
        })?;
        Ok((t, &self.files[t.file].1[t.start..t.end]))
    }
}

/// A safetensors header's entries in file order, a key that appears twice refused: serde_json's
/// map would keep the last silently, so two tensors of one name would load whichever came second.
struct Header(Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for Header {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Header, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Header;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object of tensors")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> std::result::Result<Header, A::Error> {
                let (mut out, mut seen) = (Vec::new(), HashSet::new());
                while let Some(k) = m.next_key::<String>()? {
                    if !seen.insert(k.clone()) {
                        return Err(A::Error::custom(format!("tensor `{k}` appears twice")));
                    }
                    out.push((k, m.next_value()?));
                }
                Ok(Header(out))
            }
        }
        d.deserialize_map(V)
    }
}
