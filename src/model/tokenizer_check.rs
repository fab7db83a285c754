//! tokenizer.json checked before the `tokenizers` crate sees it, and every call into that crate
//! made under `catch_unwind`. The crate's deserializers panic on some malformed files (a JSON
//! syntax error inside `"decoder"`: `.expect("Helper")`; a `Precompiled` normalizer whose
//! charsmap is missing or not base64: `.expect("Precompiled")`), and a panic would end the
//! process (a server with it) without naming the file. The checks here catch the known cases
//! with a message naming the file and the field; the unwind guard turns any other panic inside
//! the dependency into an error naming the file.
use crate::error::{Error, Result};
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn ferr(path: &str, detail: impl Into<String>) -> Error {
    Error::File {
        path: path.to_string(),
        detail: detail.into(),
    }
}

/// Runs `f` (a call into the tokenizers crate); a panic inside it becomes an error naming `path`
/// and `what` (the panic's own message kept when it is a string).
pub fn guarded<T>(path: &str, what: &str, f: impl FnOnce() -> T) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        ferr(
            path,
            format!("{what}: the tokenizers library panicked ({msg}); the file is malformed"),
        )
    })
}

/// Checks tokenizer.json's bytes as far as the crate's panics need: valid UTF-8 JSON, an object,
/// and every `Precompiled` normalizer (at any depth of `Sequence`s) with a charsmap the crate
/// accepts on its own (deserialized alone, where it returns an error instead of panicking).
pub fn check_tokenizer_json(path: &str, bytes: &[u8]) -> Result<()> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| ferr(path, format!("not valid JSON: {e}")))?;
    let obj = v.as_object().ok_or_else(|| ferr(path, "expected a JSON object"))?;
    if let Some(n) = obj.get("normalizer") {
        check_normalizer(path, "normalizer", n, 0)?;
    }
    for field in ["decoder", "pre_tokenizer", "post_processor", "normalizer"] {
        match obj.get(field) {
            None | Some(Value::Null) | Some(Value::Object(_)) => {}
            Some(x) => {
                return Err(ferr(
                    path,
                    format!("field `{field}`: expected an object or null, got {}", kind(x)),
                ))
            }
        }
    }
    match obj.get("model") {
        Some(Value::Object(_)) => Ok(()),
        None => Err(ferr(path, "field `model`: missing")),
        Some(x) => Err(ferr(
            path,
            format!("field `model`: expected an object, got {}", kind(x)),
        )),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Sequences nest; a file nesting deeper than this is refused rather than walked.
const MAX_NORMALIZER_DEPTH: usize = 16;

fn check_normalizer(path: &str, at: &str, n: &Value, depth: usize) -> Result<()> {
    if depth > MAX_NORMALIZER_DEPTH {
        return Err(ferr(
            path,
            format!("field `{at}`: normalizers nested deeper than {MAX_NORMALIZER_DEPTH}"),
        ));
    }
    let Some(o) = n.as_object() else {
        return Ok(()); // the crate's own error names a wrong type
    };
    match o.get("type").and_then(Value::as_str) {
        Some("Sequence") => {
            if let Some(Value::Array(list)) = o.get("normalizers") {
                for (i, m) in list.iter().enumerate() {
                    check_normalizer(path, &format!("{at}.normalizers[{i}]"), m, depth + 1)?;
                }
            }
            Ok(())
        }
        Some("Precompiled") => {
            let alone = guarded(path, at, || {
                serde_json::from_value::<tokenizers::normalizers::precompiled::Precompiled>(n.clone())
            })?;
            alone.map(|_| ()).map_err(|e| {
                ferr(
                    path,
                    format!("field `{at}` (Precompiled): `precompiled_charsmap` is not usable: {e}"),
                )
            })
        }
        _ => Ok(()),
    }
}
