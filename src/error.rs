//! Typed errors. Device errors name the backend and the call; op refusals name op, dtypes, device and reason.
use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("unsupported op {op} on {device}: {reason}")]
    Unsupported { op: String, device: String, reason: String },
    #[error("{device}: {call} failed: {detail}")]
    Device {
        device: String,
        call: String,
        detail: String,
    },
    #[error("shape error in {op}: {detail}")]
    Shape { op: String, detail: String },
    #[error("no such device: {0}")]
    NoDevice(String),
    /// Names in `path` and `detail` may come from the file (tensor names, metadata keys, shard
    /// names): they are printed with control characters escaped (see `escape_controls`).
    #[error("{}: {}", escape_controls(path), escape_controls(detail))]
    File { path: String, detail: String },
    /// A chat template that does not parse, raised an error of its own, or used what the engine lacks.
    #[error("chat template {}: {}", escape_controls(template), escape_controls(detail))]
    ChatTemplate { template: String, detail: String },
    #[error("{}", escape_controls(.0))]
    Other(String),
}

/// `s` with every control character written as an escape (`\n`, `\u{1b}`), so a name taken from
/// a file (a tensor name, a metadata key, a shard name, a template's own message) cannot move the
/// cursor, recolour the terminal or fake a line of output when an error is printed. Borrowed as it
/// is when there is nothing to escape (the common case).
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn shape(op: &str, detail: impl Into<String>) -> Self {
        Error::Shape {
            op: op.to_string(),
            detail: detail.into(),
        }
    }
}
