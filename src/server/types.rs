//! The response bodies, shaped as OpenAI's API shapes them (the fields its clients read): chat
//! completions and their stream chunks, text completions, the model list, usage and logprobs.
use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
}

/// One alternative of chat logprobs (`top_logprobs[i]`).
#[derive(Clone, Debug, Serialize)]
pub struct TopLogprob {
    pub token: String,
    pub logprob: f64,
    pub bytes: Vec<u8>,
}

/// One token of chat logprobs (`logprobs.content[i]`).
#[derive(Clone, Debug, Serialize)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f64,
    pub bytes: Vec<u8>,
    pub top_logprobs: Vec<TopLogprob>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChatLogprobs {
    pub content: Vec<TokenLogprob>,
    pub refusal: Option<()>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChatMessageOut {
    pub role: &'static str,
    pub content: String,
    pub refusal: Option<()>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChatChoice {
    pub index: usize,
    pub message: ChatMessageOut,
    pub logprobs: Option<ChatLogprobs>,
    pub finish_reason: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChatCompletion {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub system_fingerprint: Option<String>,
    pub choices: Vec<ChatChoice>,
    pub usage: Usage,
}

/// A stream chunk's `delta`: the role in a choice's first chunk, then content.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChunkChoice {
    pub index: usize,
    pub delta: Delta,
    pub logprobs: Option<ChatLogprobs>,
    pub finish_reason: Option<&'static str>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChatChunk {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub system_fingerprint: Option<String>,
    pub choices: Vec<ChunkChoice>,
    /// with `stream_options.include_usage`: null on every chunk but the last, which has no choices
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Option<Usage>>,
}

/// Legacy completions logprobs: parallel lists per token.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompletionLogprobs {
    pub tokens: Vec<String>,
    pub token_logprobs: Vec<f64>,
    pub top_logprobs: Vec<serde_json::Map<String, serde_json::Value>>,
    pub text_offset: Vec<usize>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CompletionChoice {
    pub index: usize,
    pub text: String,
    pub logprobs: Option<CompletionLogprobs>,
    pub finish_reason: Option<&'static str>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Completion {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub system_fingerprint: Option<String>,
    pub choices: Vec<CompletionChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Option<Usage>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Model {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub owned_by: &'static str,
    /// the context length requests may fill (vLLM reports it under this name)
    pub max_model_len: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct ModelList {
    pub object: &'static str,
    pub data: Vec<Model>,
}

/// Seconds since the epoch (OpenAI's `created`).
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
