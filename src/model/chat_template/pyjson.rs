//! Python's spelling of template values: `json.dumps` (transformers' `tojson` filter) and `str()` /
//! `repr()` (what Jinja2 prints for `{{ value }}`). Chat templates are written against Jinja2 in
//! Python, so a byte-equal prompt needs Python's float digits, quote style, escapes and separators,
//! not minijinja's or serde_json's.
use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

/// The arguments of transformers' `tojson(x, ensure_ascii=False, indent=None, separators=None,
/// sort_keys=False)`.
pub struct JsonOpts {
    pub ensure_ascii: bool,
    /// None: one line. Some(s): one item a line, `s` repeated per nesting level.
    pub indent: Option<String>,
    pub item_sep: String,
    pub key_sep: String,
    pub sort_keys: bool,
}

fn bad(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

impl JsonOpts {
    /// Reads the filter's arguments, positional (Python allows them) or by keyword, as json.dumps
    /// does: an int indent is that many spaces, a string indent is used as is, and the default
    /// separators are `(", ", ": ")` without indent and `(",", ": ")` with one.
    pub fn from_args(pos: [Option<Value>; 4], kwargs: &Kwargs) -> Result<JsonOpts, Error> {
        let [p_ascii, p_indent, p_seps, p_sort] = pos;
        let pick = |p: Option<Value>, k: &str| -> Result<Option<Value>, Error> {
            let kw: Option<Value> = kwargs.get(k)?;
            match (p, kw) {
                (Some(_), Some(_)) => Err(bad(format!("tojson: got multiple values for argument '{k}'"))),
                (p, kw) => Ok(p.or(kw)),
            }
        };
        let ensure_ascii = pick(p_ascii, "ensure_ascii")?.is_some_and(|v| v.is_true());
        let indent = match pick(p_indent, "indent")? {
            None => None,
            Some(v) if v.is_none() => None,
            Some(v) if v.kind() == ValueKind::String => Some(v.as_str().unwrap_or_default().to_string()),
            Some(v) if v.is_integer() => {
                let n = i64::try_from(v.clone()).map_err(|_| bad(format!("tojson: indent {v} out of range")))?;
                Some(" ".repeat(n.clamp(0, 1 << 16) as usize))
            }
            Some(v) => return Err(bad(format!("tojson: indent must be an int or a string, got {v}"))),
        };
        let (item_sep, key_sep) = match pick(p_seps, "separators")? {
            Some(v) if !v.is_none() => {
                let parts: Vec<Value> = v
                    .try_iter()
                    .map_err(|_| bad(format!("tojson: separators must be a pair of strings, got {v}")))?
                    .collect();
                match parts.as_slice() {
                    [a, b] if a.as_str().is_some() && b.as_str().is_some() => {
                        (a.as_str().unwrap().to_string(), b.as_str().unwrap().to_string())
                    }
                    _ => return Err(bad(format!("tojson: separators must be a pair of strings, got {v}"))),
                }
            }
            _ if indent.is_some() => (",".to_string(), ": ".to_string()),
            _ => (", ".to_string(), ": ".to_string()),
        };
        let sort_keys = pick(p_sort, "sort_keys")?.is_some_and(|v| v.is_true());
        kwargs.assert_all_used()?;
        Ok(JsonOpts {
            ensure_ascii,
            indent,
            item_sep,
            key_sep,
            sort_keys,
        })
    }
}

/// `json.dumps(v, ...)`.
pub fn dumps(v: &Value, o: &JsonOpts) -> Result<String, Error> {
    let mut out = String::new();
    write_json(&mut out, v, o, 0)?;
    Ok(out)
}

fn newline(out: &mut String, o: &JsonOpts, level: usize) {
    if let Some(ind) = &o.indent {
        out.push('\n');
        for _ in 0..level {
            out.push_str(ind);
        }
    }
}

fn write_json(out: &mut String, v: &Value, o: &JsonOpts, level: usize) -> Result<(), Error> {
    match v.kind() {
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => out.push_str(&number(v, true)),
        ValueKind::String => json_str(out, v.as_str().unwrap_or_default(), o.ensure_ascii),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = v.try_iter()?.collect();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&o.item_sep);
                }
                newline(out, o, level + 1);
                write_json(out, it, o, level + 1)?;
            }
            newline(out, o, level);
            out.push(']');
        }
        ValueKind::Map => {
            let mut pairs: Vec<(String, Value)> = Vec::new();
            for k in v.try_iter()? {
                let key = match k.kind() {
                    ValueKind::String => k.as_str().unwrap_or_default().to_string(),
                    // json.dumps turns these keys into strings the way it writes them as values
                    ValueKind::Number => number(&k, true),
                    ValueKind::Bool => (if k.is_true() { "true" } else { "false" }).to_string(),
                    ValueKind::None => "null".to_string(),
                    _ => {
                        return Err(bad(format!(
                            "tojson: keys must be str, int, float, bool or None, not {k}"
                        )))
                    }
                };
                let val = v.get_item(&k)?;
                pairs.push((key, val));
            }
            if o.sort_keys {
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
            }
            if pairs.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, (k, val)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(&o.item_sep);
                }
                newline(out, o, level + 1);
                json_str(out, k, o.ensure_ascii);
                out.push_str(&o.key_sep);
                write_json(out, val, o, level + 1)?;
            }
            newline(out, o, level);
            out.push('}');
        }
        // Python's json.dumps refuses what it cannot spell (an Undefined, a namespace, bytes)
        kind => {
            return Err(bad(format!("tojson: object of type {kind} is not JSON serializable")));
        }
    }
    Ok(())
}

/// A JSON string literal as Python writes it: `"`, `\` and control characters escaped (short forms
/// \n \r \t \b \f, else \u00XX in lowercase hex); with ensure_ascii, everything outside printable
/// ASCII as \uXXXX (UTF-16 surrogate pairs above U+FFFF).
fn json_str(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ensure_ascii && !(' '..='~').contains(&c) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{:04x}", unit));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A number as Python writes it: ints in decimal, floats as `float.__repr__` (shortest round-trip
/// digits, `.0` on integral values, exponent form below 1e-4 and from 1e16). `json` spells the
/// non-finite floats Infinity / NaN, `str()` spells them inf / nan.
fn number(v: &Value, json: bool) -> String {
    if v.is_integer() {
        return v.to_string();
    }
    let f = f64::try_from(v.clone()).unwrap_or(f64::NAN);
    if f.is_nan() {
        return (if json { "NaN" } else { "nan" }).into();
    }
    if f.is_infinite() {
        let s = if json { "Infinity" } else { "inf" };
        return if f < 0.0 { format!("-{s}") } else { s.into() };
    }
    py_float(f)
}

pub fn py_float(f: f64) -> String {
    // `{:e}` gives the shortest round-trip digits with the decimal exponent, e.g. "1.5e-5"
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        let s = format!("{f}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    }
}

/// `str(v)`: what Jinja2 prints for `{{ v }}` and what `|string` gives (strings as they are,
/// None/True/False capitalised, containers as their repr).
pub fn py_str(v: &Value) -> String {
    match v.kind() {
        ValueKind::String => v.as_str().unwrap_or_default().to_string(),
        ValueKind::Undefined => String::new(),
        _ => py_repr(v),
    }
}

/// `repr(v)` for the JSON-like values templates hold.
pub fn py_repr(v: &Value) -> String {
    match v.kind() {
        ValueKind::None => "None".into(),
        ValueKind::Undefined => String::new(),
        ValueKind::Bool => (if v.is_true() { "True" } else { "False" }).into(),
        ValueKind::Number => number(v, false),
        ValueKind::String => str_repr(v.as_str().unwrap_or_default()),
        ValueKind::Seq => {
            let items: Vec<String> = v
                .try_iter()
                .map(|it| it.map(|x| py_repr(&x)).collect())
                .unwrap_or_default();
            format!("[{}]", items.join(", "))
        }
        ValueKind::Map => {
            let items: Vec<String> = v
                .try_iter()
                .map(|it| {
                    it.map(|k| {
                        let val = v.get_item(&k).unwrap_or_default();
                        format!("{}: {}", py_repr(&k), py_repr(&val))
                    })
                    .collect()
                })
                .unwrap_or_default();
            format!("{{{}}}", items.join(", "))
        }
        _ => v.to_string(),
    }
}

/// Python's string repr: single quotes unless the text holds a single quote and no double quote.
fn str_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> JsonOpts {
        JsonOpts {
            ensure_ascii: false,
            indent: None,
            item_sep: ", ".into(),
            key_sep: ": ".into(),
            sort_keys: false,
        }
    }

    // Expected strings are what CPython 3.11 prints for the same values (json.dumps, repr).
    #[test]
    fn floats_as_python_repr() {
        for (f, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (123456789012345.6, "123456789012345.6"),
            (-2.5, "-2.5"),
            (1e300, "1e+300"),
        ] {
            assert_eq!(py_float(f), want, "{f}");
        }
    }

    #[test]
    fn dumps_like_python() {
        let v: Value = serde_json::from_str(r#"{"b": [1, 2.0, "é\n\u0001"], "a": {}, "c": [], "d": null}"#).unwrap();
        assert_eq!(
            dumps(&v, &opts()).unwrap(),
            r#"{"b": [1, 2.0, "é\n\u0001"], "a": {}, "c": [], "d": null}"#
        );
        let o = JsonOpts {
            ensure_ascii: true,
            sort_keys: true,
            ..opts()
        };
        assert_eq!(
            dumps(&Value::from_serialize(serde_json::json!({"x": "é🙂"})), &o).unwrap(),
            r#"{"x": "\u00e9\ud83d\ude42"}"#
        );
        let o = JsonOpts {
            indent: Some("  ".into()),
            item_sep: ",".into(),
            ..opts()
        };
        assert_eq!(
            dumps(&v, &o).unwrap(),
            "{\n  \"b\": [\n    1,\n    2.0,\n    \"é\\n\\u0001\"\n  ],\n  \"a\": {},\n  \"c\": [],\n  \"d\": null\n}"
        );
    }

    #[test]
    fn repr_like_python() {
        let v: Value = serde_json::from_str(r#"[null, true, "it's", "a'b\"c", 3, {"k": 1.0}]"#).unwrap();
        assert_eq!(py_str(&v), r#"[None, True, "it's", 'a\'b"c', 3, {'k': 1.0}]"#);
    }
}
