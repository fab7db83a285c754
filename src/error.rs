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
    #[error("{path}: {detail}")]
    File { path: String, detail: String },
    /// A chat template that does not parse, raised an error of its own, or used what the engine lacks.
    #[error("chat template {template}: {detail}")]
    ChatTemplate { template: String, detail: String },
    #[error("{0}")]
    Other(String),
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
