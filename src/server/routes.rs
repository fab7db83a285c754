//! The two generation endpoints: `POST /v1/chat/completions` (messages through the model's chat
//! template) and `POST /v1/completions` (a text or token-id prompt). Each reads and checks its body
//! (params.rs), turns it into prompt ids, runs it (generate.rs), and answers with one JSON body or,
//! with `stream: true`, server-sent events (sse.rs).
use super::app::AppState;
use super::error::ApiError;
use super::generate::{Job, Run, TokenLp};
use super::params::{ChatRequest, CompletionRequest, Prompt};
use super::sse;
use super::types::*;
use crate::model::tokenizer::ChatOptions;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Json, Response};
use std::sync::Arc;
use std::time::Instant;

/// What every response and chunk of one request repeats.
#[derive(Clone)]
pub struct Meta {
    pub id: String,
    pub created: u64,
    pub model: String,
}

impl Meta {
    fn new(prefix: &str, st: &AppState) -> Meta {
        Meta {
            id: format!("{prefix}-{:016x}", super::generate::request_uid()),
            created: now(),
            model: st.cfg.served_model_name.clone(),
        }
    }
}

pub async fn chat(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    chat_inner(st, headers, body)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

pub async fn completions(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    completions_inner(st, headers, body)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn chat_inner(st: Arc<AppState>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let arrived = Instant::now();
    st.auth(&headers)?;
    let bytes = st.read_body(body).await?;
    let req = ChatRequest::parse(&bytes)?;
    st.check_model(&req.common.model)?;
    let loaded = st.loaded()?;
    let tok = loaded.tokenizer.as_ref().ok_or_else(|| {
        ApiError::field(
            "messages",
            "the model has no tokenizer: use /v1/completions with token ids",
        )
    })?;
    let opts = ChatOptions {
        add_generation_prompt: true,
        ..ChatOptions::default()
    };
    let text = tok
        .apply_chat_template(&req.messages, &opts)
        .map_err(|e| ApiError::field("messages", e.to_string()))?;
    let prompt = encode(tok, &text, loaded.max_ctx, "messages")?;
    let job = Job {
        prompt,
        prompt_field: "messages",
        common: req.common.clone(),
        logprobs: req.logprobs,
        arrived,
    };
    let run = Run::start(st.clone(), job).await?;
    let meta = Meta::new("chatcmpl", &st);
    if req.common.stream {
        return Ok(sse::chat(run, meta, req.common.include_usage, req.logprobs.is_some()));
    }
    let (texts, lps, fins, usage) = collect(run).await?;
    let choices = (0..texts.len())
        .map(|i| ChatChoice {
            index: i,
            message: ChatMessageOut {
                role: "assistant",
                content: texts[i].clone(),
                refusal: None,
            },
            logprobs: req.logprobs.map(|_| chat_logprobs(&lps[i])),
            finish_reason: fins[i],
        })
        .collect();
    Ok(Json(ChatCompletion {
        id: meta.id,
        object: "chat.completion",
        created: meta.created,
        model: meta.model,
        system_fingerprint: None,
        choices,
        usage,
    })
    .into_response())
}

/// A prompt's ids; a text that surely has more tokens than the context is refused (400 naming
/// `field`, as the exact check does later) before the whole of it is tokenized.
fn encode(tok: &crate::model::tokenizer::Tokenizer, text: &str, ctx: usize, field: &str) -> Result<Vec<u32>, ApiError> {
    if tok.surely_longer_than(text, ctx) {
        return Err(ApiError::context_length(
            field,
            format!(
                "this model's maximum context length is {ctx} tokens, and the prompt's {} bytes of text surely \
                 take more (judged before tokenizing)",
                text.len()
            ),
        ));
    }
    tok.encode_prompt(text).map_err(|e| ApiError::internal(e.to_string()))
}

async fn completions_inner(st: Arc<AppState>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let arrived = Instant::now();
    st.auth(&headers)?;
    let bytes = st.read_body(body).await?;
    let req = CompletionRequest::parse(&bytes)?;
    st.check_model(&req.common.model)?;
    let loaded = st.loaded()?;
    let prompt = match &req.prompt {
        Prompt::Ids(ids) => ids.clone(),
        Prompt::Text(t) => loaded
            .tokenizer
            .as_ref()
            .ok_or_else(|| ApiError::field("prompt", "the model has no tokenizer: give the prompt as token ids"))
            .and_then(|tok| encode(tok, t, loaded.max_ctx, "prompt"))?,
    };
    let job = Job {
        prompt,
        prompt_field: "prompt",
        common: req.common.clone(),
        logprobs: req.logprobs,
        arrived,
    };
    let run = Run::start(st.clone(), job).await?;
    let meta = Meta::new("cmpl", &st);
    if req.common.stream {
        return Ok(sse::completion(
            run,
            meta,
            req.common.include_usage,
            req.logprobs.is_some(),
        ));
    }
    let (texts, lps, fins, usage) = collect(run).await?;
    let choices = (0..texts.len())
        .map(|i| CompletionChoice {
            index: i,
            text: texts[i].clone(),
            logprobs: req.logprobs.map(|_| completion_logprobs(&lps[i], 0)),
            finish_reason: Some(fins[i]),
        })
        .collect();
    Ok(Json(Completion {
        id: meta.id,
        object: "text_completion",
        created: meta.created,
        model: meta.model,
        system_fingerprint: None,
        choices,
        usage: Some(Some(usage)),
    })
    .into_response())
}

type Collected = (Vec<String>, Vec<Vec<TokenLp>>, Vec<&'static str>, Usage);

/// Every choice's whole text, logprobs and finish reason (non-streaming responses).
async fn collect(mut run: Run) -> Result<Collected, ApiError> {
    let n = run.n();
    let (mut texts, mut lps, mut fins) = (vec![String::new(); n], vec![vec![]; n], vec!["length"; n]);
    while let Some(u) = run.next().await {
        let u = u?;
        texts[u.index].push_str(&u.delta);
        if let Some(lp) = u.logprob {
            lps[u.index].push(lp);
        }
        if let Some(f) = u.finish {
            fins[u.index] = f;
        }
    }
    Ok((texts, lps, fins, run.usage()))
}

pub fn chat_logprobs(lps: &[TokenLp]) -> ChatLogprobs {
    ChatLogprobs {
        content: lps
            .iter()
            .map(|t| TokenLogprob {
                token: t.text.clone(),
                logprob: t.logprob,
                bytes: t.text.as_bytes().to_vec(),
                top_logprobs: t
                    .top
                    .iter()
                    .map(|(s, l)| TopLogprob {
                        token: s.clone(),
                        logprob: *l,
                        bytes: s.as_bytes().to_vec(),
                    })
                    .collect(),
            })
            .collect(),
        refusal: None,
    }
}

/// Legacy logprobs; `offset`: where the first token's text starts in the choice's text.
pub fn completion_logprobs(lps: &[TokenLp], offset: usize) -> CompletionLogprobs {
    let mut out = CompletionLogprobs::default();
    let mut at = offset;
    for t in lps {
        out.tokens.push(t.text.clone());
        out.token_logprobs.push(t.logprob);
        out.top_logprobs
            .push(t.top.iter().map(|(s, l)| (s.clone(), serde_json::json!(l))).collect());
        out.text_offset.push(at);
        at += t.text.len();
    }
    out
}
