//! Streaming responses: server-sent events, one `data: {chunk}` per token as OpenAI streams them,
//! an optional usage chunk (`stream_options.include_usage`), and `data: [DONE]` at the end. A
//! failure after the stream began (engine error, shutdown) is sent as an `{"error": ...}` event
//! before `[DONE]`. The stream owns the `Run`: when the client disconnects, hyper drops the stream,
//! which aborts the request in the engine.
use super::generate::{Run, Update};
use super::routes::{chat_logprobs, completion_logprobs, Meta};
use super::types::*;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, StreamExt};
use std::convert::Infallible;

enum Phase {
    Start,
    Tokens,
    Done,
}

struct St<F, U> {
    run: Run,
    phase: Phase,
    include_usage: bool,
    /// the chunks sent before any token (chat: each choice's role)
    opening: Vec<String>,
    /// the last chunk with `stream_options.include_usage`
    usage_chunk: U,
    /// turns one update into its chunks' JSON
    chunks: F,
}

fn data(s: String) -> Result<Event, Infallible> {
    Ok(Event::default().data(s))
}

fn stream<F, U>(run: Run, include_usage: bool, opening: Vec<String>, usage_chunk: U, chunks: F) -> Response
where
    F: FnMut(Update) -> Vec<String> + Send + 'static,
    U: Fn(Usage) -> String + Send + 'static,
{
    let st = St {
        run,
        phase: Phase::Start,
        include_usage,
        opening,
        usage_chunk,
        chunks,
    };
    let s = stream::unfold(st, |mut st| async move {
        match st.phase {
            Phase::Start => {
                st.phase = Phase::Tokens;
                let v = std::mem::take(&mut st.opening);
                Some((v, st))
            }
            Phase::Tokens => match st.run.next().await {
                Some(Ok(u)) => {
                    let v = (st.chunks)(u);
                    Some((v, st))
                }
                Some(Err(e)) => {
                    st.phase = Phase::Done;
                    Some((vec![e.body(), "[DONE]".into()], st))
                }
                None => {
                    st.phase = Phase::Done;
                    let mut v = vec![];
                    if st.include_usage {
                        v.push((st.usage_chunk)(st.run.usage()));
                    }
                    v.push("[DONE]".into());
                    Some((v, st))
                }
            },
            Phase::Done => None,
        }
    });
    let s = s.flat_map(|v| stream::iter(v.into_iter().map(data)));
    Sse::new(s).into_response()
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("a chunk serializes")
}

pub fn chat(run: Run, meta: Meta, include_usage: bool, logprobs: bool) -> Response {
    let usage = include_usage.then_some(None);
    let chunk = {
        let meta = meta.clone();
        move |choices: Vec<ChunkChoice>, usage: Option<Option<Usage>>| ChatChunk {
            id: meta.id.clone(),
            object: "chat.completion.chunk",
            created: meta.created,
            model: meta.model.clone(),
            system_fingerprint: None,
            choices,
            usage,
        }
    };
    let opening = (0..run.n())
        .map(|i| {
            json(&chunk(
                vec![ChunkChoice {
                    index: i,
                    delta: Delta {
                        role: Some("assistant"),
                        content: Some(String::new()),
                    },
                    logprobs: None,
                    finish_reason: None,
                }],
                usage,
            ))
        })
        .collect();
    let c2 = chunk.clone();
    let usage_chunk = move |u: Usage| json(&c2(vec![], Some(Some(u))));
    let updates = move |u: Update| {
        let mut v = vec![];
        if !u.delta.is_empty() || u.logprob.is_some() {
            v.push(json(&chunk(
                vec![ChunkChoice {
                    index: u.index,
                    delta: Delta {
                        role: None,
                        content: Some(u.delta),
                    },
                    logprobs: logprobs.then(|| chat_logprobs(u.logprob.as_slice())),
                    finish_reason: None,
                }],
                usage,
            )));
        }
        if let Some(f) = u.finish {
            v.push(json(&chunk(
                vec![ChunkChoice {
                    index: u.index,
                    delta: Delta::default(),
                    logprobs: None,
                    finish_reason: Some(f),
                }],
                usage,
            )));
        }
        v
    };
    stream(run, include_usage, opening, usage_chunk, updates)
}

pub fn completion(run: Run, meta: Meta, include_usage: bool, logprobs: bool) -> Response {
    let usage = include_usage.then_some(None);
    let chunk = move |choices: Vec<CompletionChoice>, usage: Option<Option<Usage>>| Completion {
        id: meta.id.clone(),
        object: "text_completion",
        created: meta.created,
        model: meta.model.clone(),
        system_fingerprint: None,
        choices,
        usage,
    };
    let c2 = chunk.clone();
    let usage_chunk = move |u: Usage| json(&c2(vec![], Some(Some(u))));
    // where each choice's next token starts in its text (logprobs' text_offset)
    let mut offsets = vec![0usize; run.n()];
    let updates = move |u: Update| {
        let at = offsets[u.index];
        offsets[u.index] += u.logprob.as_ref().map_or(0, |t| t.text.len());
        vec![json(&chunk(
            vec![CompletionChoice {
                index: u.index,
                text: u.delta,
                logprobs: logprobs.then(|| completion_logprobs(u.logprob.as_slice(), at)),
                finish_reason: u.finish,
            }],
            usage,
        ))]
    };
    stream(run, include_usage, vec![], usage_chunk, updates)
}
