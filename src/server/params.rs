//! The request bodies of `/v1/chat/completions` and `/v1/completions`, read field by field so every
//! refusal names its field: a wrong type or value (400, `param` = the field), a field of the OpenAI
//! schema this server does not implement (400 unless it holds its no-op value, see `UNSUPPORTED_*`),
//! a field OpenAI does not know (400). Nothing is silently ignored.
use super::error::ApiError;
use crate::model::tokenizer::ChatMessage;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

/// A JSON object whose fields are taken one by one; what is left at the end is refused.
pub struct Fields {
    map: Map<String, Value>,
}

impl Fields {
    pub fn parse(body: &[u8]) -> Result<Fields, ApiError> {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(map)) => Ok(Fields { map }),
            Ok(_) => Err(ApiError::bad_request("request body: expected a JSON object")),
            Err(e) => Err(ApiError::bad_request(format!("request body: not valid JSON: {e}"))),
        }
    }

    /// The field's value, None when absent or null; a value of the wrong type names the field.
    pub fn take<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, ApiError> {
        match self.map.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v)
                .map(Some)
                .map_err(|e| ApiError::field(name, e.to_string())),
        }
    }

    pub fn take_value(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name).filter(|v| !v.is_null())
    }

    /// Refuses what is left: a field of `unsupported` unless it holds that entry's no-op value (or
    /// null), anything else as unknown.
    pub fn finish(self, unsupported: &[(&str, Option<Value>)]) -> Result<(), ApiError> {
        let mut keys: Vec<&String> = self.map.keys().collect();
        keys.sort();
        for k in keys {
            let v = &self.map[k];
            match unsupported.iter().find(|(n, _)| n == k) {
                Some(_) if v.is_null() => {}
                Some((_, Some(noop))) if v == noop => {}
                Some(_) => return Err(ApiError::unsupported(k)),
                None => return Err(ApiError::unknown(k)),
            }
        }
        Ok(())
    }
}

/// Fields of OpenAI's chat schema not implemented here, with the value that means "off".
pub fn unsupported_chat() -> Vec<(&'static str, Option<Value>)> {
    let mut v = common_unsupported();
    v.extend([
        ("tools", Some(json!([]))),
        ("tool_choice", Some(json!("none"))),
        ("parallel_tool_calls", None),
        ("functions", Some(json!([]))),
        ("function_call", Some(json!("none"))),
        ("response_format", Some(json!({"type": "text"}))),
        ("audio", None),
        ("modalities", Some(json!(["text"]))),
        ("prediction", None),
        ("reasoning_effort", None),
        ("service_tier", Some(json!("auto"))),
        ("store", Some(json!(false))),
        ("metadata", None),
        ("web_search_options", None),
        ("verbosity", None),
        ("prompt_cache_key", None),
        ("safety_identifier", None),
    ]);
    v
}

/// Fields of OpenAI's completions schema not implemented here, with the value that means "off".
pub fn unsupported_completions() -> Vec<(&'static str, Option<Value>)> {
    let mut v = common_unsupported();
    v.extend([
        ("echo", Some(json!(false))),
        ("best_of", Some(json!(1))),
        ("suffix", None),
    ]);
    v
}

fn common_unsupported() -> Vec<(&'static str, Option<Value>)> {
    vec![
        ("frequency_penalty", Some(json!(0))),
        ("presence_penalty", Some(json!(0))),
        ("logit_bias", Some(json!({}))),
    ]
}

/// What both endpoints share.
#[derive(Clone, Debug)]
pub struct Common {
    pub model: String,
    pub max_tokens: Option<usize>,
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: usize,
    pub seed: Option<u64>,
    pub stop: Vec<String>,
    pub n: usize,
    pub stream: bool,
    pub include_usage: bool,
}

/// The most choices one request may ask for (each is a sequence of the engine).
pub const MAX_N: usize = 16;
/// OpenAI's limit on top_logprobs (chat) and logprobs (completions: 5 there; 20 here).
pub const MAX_TOP_LOGPROBS: usize = 20;

impl Common {
    pub fn read(f: &mut Fields) -> Result<Common, ApiError> {
        let model: String = f.take("model")?.ok_or_else(|| ApiError::field("model", "required"))?;
        let mct: Option<i64> = f.take("max_completion_tokens")?;
        let mt: Option<i64> = f.take("max_tokens")?;
        let (mt_name, mt) = match (mct, mt) {
            (Some(a), _) => ("max_completion_tokens", Some(a)),
            (None, b) => ("max_tokens", b),
        };
        let max_tokens = match mt {
            Some(v) if v < 1 => return Err(ApiError::field(mt_name, format!("must be >= 1, got {v}"))),
            v => v.map(|v| v as usize),
        };
        let temperature: f32 = f.take("temperature")?.unwrap_or(1.0);
        if !(0.0..=2.0).contains(&temperature) {
            return Err(ApiError::field(
                "temperature",
                format!("must be in [0, 2], got {temperature}"),
            ));
        }
        let top_p: f32 = f.take("top_p")?.unwrap_or(1.0);
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(ApiError::field("top_p", format!("must be in (0, 1], got {top_p}")));
        }
        let top_k: i64 = f.take("top_k")?.unwrap_or(0);
        // vLLM's convention: -1 (like 0) turns top-k off
        if top_k < -1 {
            return Err(ApiError::field(
                "top_k",
                format!("must be >= 0 (0 or -1: off), got {top_k}"),
            ));
        }
        let seed: Option<i64> = f.take("seed")?;
        let stop = match f.take_value("stop") {
            None => vec![],
            Some(Value::String(s)) => vec![s],
            Some(v @ Value::Array(_)) => serde_json::from_value::<Vec<String>>(v)
                .map_err(|e| ApiError::field("stop", format!("a string or a list of strings: {e}")))?,
            Some(_) => return Err(ApiError::field("stop", "a string or a list of strings")),
        };
        if stop.len() > 16 || stop.iter().any(|s| s.is_empty()) {
            return Err(ApiError::field("stop", "at most 16 non-empty strings"));
        }
        let n: i64 = f.take("n")?.unwrap_or(1);
        if !(1..=MAX_N as i64).contains(&n) {
            return Err(ApiError::field("n", format!("must be in [1, {MAX_N}], got {n}")));
        }
        let stream: bool = f.take("stream")?.unwrap_or(false);
        let mut include_usage = false;
        if let Some(v) = f.take_value("stream_options") {
            let mut so = match v {
                Value::Object(map) => Fields { map },
                _ => return Err(ApiError::field("stream_options", "expected an object")),
            };
            if !stream {
                return Err(ApiError::field("stream_options", "only allowed when stream is true"));
            }
            include_usage = so
                .take("include_usage")
                .map_err(|e| ApiError::field("stream_options.include_usage", e.message))?
                .unwrap_or(false);
            let left: Vec<String> = so.map.keys().cloned().collect();
            if let Some(k) = left.first() {
                return Err(ApiError::unsupported(&format!("stream_options.{k}")));
            }
        }
        // `user` identifies the end user for abuse tracking; a local server has nothing to do with it
        let _user: Option<String> = f.take("user")?;
        Ok(Common {
            model,
            max_tokens,
            temperature,
            top_p,
            top_k: top_k.max(0) as usize,
            seed: seed.map(|s| s as u64),
            stop,
            n: n as usize,
            stream,
            include_usage,
        })
    }
}

/// A chat completion request.
#[derive(Clone, Debug)]
pub struct ChatRequest {
    pub common: Common,
    pub messages: Vec<ChatMessage>,
    /// the engine's logprobs: None, or Some(top_logprobs)
    pub logprobs: Option<usize>,
}

impl ChatRequest {
    pub fn parse(body: &[u8]) -> Result<ChatRequest, ApiError> {
        let mut f = Fields::parse(body)?;
        let common = Common::read(&mut f)?;
        let messages = match f.take_value("messages") {
            Some(Value::Array(v)) if !v.is_empty() => v
                .into_iter()
                .enumerate()
                .map(|(i, m)| message(i, m))
                .collect::<Result<Vec<_>, _>>()?,
            Some(Value::Array(_)) => return Err(ApiError::field("messages", "must not be empty")),
            Some(_) => return Err(ApiError::field("messages", "expected a list of messages")),
            None => return Err(ApiError::field("messages", "required")),
        };
        let logprobs: bool = f.take("logprobs")?.unwrap_or(false);
        let top: Option<i64> = f.take("top_logprobs")?;
        let logprobs = match (logprobs, top) {
            (_, Some(k)) if !(0..=MAX_TOP_LOGPROBS as i64).contains(&k) => {
                return Err(ApiError::field(
                    "top_logprobs",
                    format!("must be in [0, {MAX_TOP_LOGPROBS}], got {k}"),
                ))
            }
            (false, Some(_)) => return Err(ApiError::field("top_logprobs", "requires logprobs: true")),
            (true, k) => Some(k.unwrap_or(0) as usize),
            (false, None) => None,
        };
        f.finish(&unsupported_chat())?;
        Ok(ChatRequest {
            common,
            messages,
            logprobs,
        })
    }
}

/// One message: `role` and `content` (a string, or a list of text parts, which are joined).
fn message(i: usize, m: Value) -> Result<ChatMessage, ApiError> {
    let at = |k: &str| format!("messages[{i}].{k}");
    let Value::Object(map) = m else {
        return Err(ApiError::field(&format!("messages[{i}]"), "expected an object"));
    };
    let mut f = Fields { map };
    let role: String = f
        .take("role")
        .map_err(|e| ApiError::field(&at("role"), e.message))?
        .ok_or_else(|| ApiError::field(&at("role"), "required"))?;
    if !["system", "developer", "user", "assistant"].contains(&role.as_str()) {
        return Err(ApiError::field(
            &at("role"),
            format!("`{role}` is not supported (system, developer, user or assistant)"),
        ));
    }
    let content = match f.take_value("content") {
        Some(Value::String(s)) => s,
        Some(Value::Array(parts)) => {
            let mut s = String::new();
            for (j, p) in parts.into_iter().enumerate() {
                let pat = format!("messages[{i}].content[{j}]");
                match (
                    p.get("type").and_then(Value::as_str),
                    p.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(t)) if p.as_object().is_some_and(|o| o.len() == 2) => s.push_str(t),
                    _ => {
                        return Err(ApiError::field(
                            &pat,
                            "only text parts ({\"type\": \"text\", \"text\": ...})",
                        ))
                    }
                }
            }
            s
        }
        None if role == "assistant" => String::new(),
        None => return Err(ApiError::field(&at("content"), "required")),
        Some(_) => return Err(ApiError::field(&at("content"), "a string or a list of text parts")),
    };
    // `name` distinguishes participants of the same role; chat templates have no place for it
    let left: Vec<String> = f.map.keys().cloned().collect();
    if let Some(k) = left.first() {
        return Err(ApiError::unsupported(&at(k)));
    }
    // OpenAI's `developer` role is the newer name of `system`
    let role = if role == "developer" {
        "system".to_string()
    } else {
        role
    };
    Ok(ChatMessage { role, content })
}

/// A completions prompt: text or token ids.
#[derive(Clone, Debug, PartialEq)]
pub enum Prompt {
    Text(String),
    Ids(Vec<u32>),
}

#[derive(Clone, Debug)]
pub struct CompletionRequest {
    pub common: Common,
    pub prompt: Prompt,
    pub logprobs: Option<usize>,
}

impl CompletionRequest {
    pub fn parse(body: &[u8]) -> Result<CompletionRequest, ApiError> {
        let mut f = Fields::parse(body)?;
        let common = Common::read(&mut f)?;
        let several = || ApiError::field("prompt", "several prompts in one request are not supported; send one");
        let prompt = match f.take_value("prompt") {
            Some(Value::String(s)) => Prompt::Text(s),
            Some(Value::Array(v)) if v.is_empty() => return Err(ApiError::field("prompt", "must not be empty")),
            Some(Value::Array(v)) if v.iter().all(Value::is_u64) => Prompt::Ids(
                v.iter()
                    .map(|x| u32::try_from(x.as_u64().unwrap()))
                    .collect::<Result<_, _>>()
                    .map_err(|_| ApiError::field("prompt", "a token id does not fit in 32 bits"))?,
            ),
            Some(Value::Array(v)) if v.len() == 1 && v[0].is_string() => Prompt::Text(v[0].as_str().unwrap().into()),
            Some(Value::Array(v)) if v.len() == 1 && v[0].is_array() => serde_json::from_value(v[0].clone())
                .map(Prompt::Ids)
                .map_err(|e| ApiError::field("prompt", e.to_string()))?,
            Some(Value::Array(_)) => return Err(several()),
            Some(_) => return Err(ApiError::field("prompt", "a string or a list of token ids")),
            None => return Err(ApiError::field("prompt", "required")),
        };
        let logprobs: Option<i64> = f.take("logprobs")?;
        if let Some(k) = logprobs {
            if !(0..=MAX_TOP_LOGPROBS as i64).contains(&k) {
                return Err(ApiError::field(
                    "logprobs",
                    format!("must be in [0, {MAX_TOP_LOGPROBS}], got {k}"),
                ));
            }
        }
        f.finish(&unsupported_completions())?;
        Ok(CompletionRequest {
            common,
            prompt,
            logprobs: logprobs.map(|k| k as usize),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(body: Value) -> Result<ChatRequest, ApiError> {
        ChatRequest::parse(body.to_string().as_bytes())
    }

    #[test]
    fn every_refusal_names_its_field() {
        let base = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        assert!(chat(base.clone()).is_ok());
        for (field, value) in [
            ("temperature", json!(3)),
            ("temperature", json!("hot")),
            ("top_p", json!(0)),
            ("max_tokens", json!(0)),
            ("max_completion_tokens", json!(-1)),
            ("n", json!(0)),
            ("stop", json!(5)),
            ("top_logprobs", json!(3)),
            ("frequency_penalty", json!(0.5)),
            ("tools", json!([{"type": "function"}])),
            ("bogus", json!(1)),
        ] {
            let mut b = base.clone();
            b[field] = value;
            let e = chat(b).unwrap_err();
            assert_eq!(e.status.as_u16(), 400);
            assert_eq!(e.param.as_deref(), Some(field), "{e:?}");
            assert!(e.message.contains(field), "{e:?}");
        }
        // no-op values of unsupported fields are accepted
        let mut b = base.clone();
        b["frequency_penalty"] = json!(0);
        b["tools"] = json!(null);
        assert!(chat(b).is_ok());
        let mut b = base.clone();
        b["messages"][0]["name"] = json!("bob");
        assert_eq!(chat(b).unwrap_err().param.as_deref(), Some("messages[0].name"));
    }

    #[test]
    fn completion_prompts() {
        let p = |v: Value| CompletionRequest::parse(json!({"model": "m", "prompt": v}).to_string().as_bytes());
        assert_eq!(p(json!("a")).unwrap().prompt, Prompt::Text("a".into()));
        assert_eq!(p(json!([1, 2])).unwrap().prompt, Prompt::Ids(vec![1, 2]));
        assert_eq!(p(json!([[3]])).unwrap().prompt, Prompt::Ids(vec![3]));
        assert_eq!(p(json!(["a", "b"])).unwrap_err().param.as_deref(), Some("prompt"));
    }
}
