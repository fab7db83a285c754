//! Chat templates as the Hugging Face ecosystem writes them: Jinja2 source rendered the way
//! transformers' `apply_chat_template(..., tokenize=False)` renders it (transformers
//! `utils/chat_template_utils.py`):
//! - the environment: `trim_blocks` and `lstrip_blocks` on, loop controls (`break`, `continue`), no
//!   autoescape, a single trailing newline of the source dropped (Jinja2's default);
//! - Python's methods on strings, dicts and lists (`startswith`, `strip`, `split`, `items`, `get`,
//!   ...: minijinja-contrib's pycompat), and Python's spelling of printed values (`None`, `True`,
//!   list and dict reprs: pyjson.rs);
//! - the globals and filters transformers adds: `raise_exception(msg)` (an error carrying the
//!   template's message), `strftime_now(fmt)` (strftime.rs), and `tojson` with json.dumps'
//!   arguments and transformers' defaults (ensure_ascii off, `", "` / `": "` separators);
//! - the `{% generation %}` block of assistant-mask templates, which renders its body unchanged;
//! - the context: `messages`, `tools` and `documents` (none unless given), `add_generation_prompt`,
//!   the tokenizer's named special tokens (`bos_token`, `eos_token`, `unk_token`, `sep_token`,
//!   `pad_token`, `cls_token`, `mask_token`, those it has), then the caller's extra variables
//!   (`enable_thinking`, `date_string`, ...), which win over special tokens as they do there.
mod pyjson;
mod strftime;

use crate::error::{Error, Result};
use minijinja::value::{Kwargs, Rest, Value};
use minijinja::{Environment, ErrorKind};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// One message of a conversation (`role`: system, user, assistant, ...).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: &str, content: &str) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// What a chat template is rendered with besides the messages.
#[derive(Clone, Debug, Default)]
pub struct ChatOptions {
    /// End with the assistant's turn opened (the prompt for a reply).
    pub add_generation_prompt: bool,
    /// Qwen3's `enable_thinking` switch; None leaves it undefined (the template's default).
    pub enable_thinking: Option<bool>,
    /// Tool definitions (transformers' `tools`: a JSON list of function schemas) as JSON text. Text,
    /// not a serde_json value, because `tojson` writes an object's keys in the order they were
    /// written, as Python's dicts keep them; None renders `tools` as none.
    pub tools: Option<String>,
    /// Further template variables, as transformers' `**kwargs` (e.g. `date_string`, which Llama 3.x
    /// templates print instead of today's date). They override the special tokens of the same name.
    pub extra: Vec<(String, serde_json::Value)>,
}

/// A chat template ready to render: the Jinja source, the name its errors carry, and the special
/// tokens it sees.
pub struct ChatTemplate {
    env: Environment<'static>,
    name: String,
    special: Vec<(String, String)>,
    /// The instant `strftime_now` reads (seconds since the epoch, UTC); i64::MIN: the system clock.
    clock: Arc<AtomicI64>,
}

/// The names transformers passes from a tokenizer's special tokens (its SPECIAL_TOKENS_ATTRIBUTES).
pub const SPECIAL_TOKEN_NAMES: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

const TEMPLATE: &str = "chat";

/// Instructions one render may execute (minijinja's fuel, about one per instruction). Real
/// templates spend a few hundred per message (Qwen3's with tools: ~2,000 for a turn), so ten
/// million is room for conversations of thousands of messages, while two nested `range(10000)`
/// loops (10^8 iterations, 5 GB of output) stop within a second.
pub const RENDER_FUEL: u64 = 10_000_000;
/// Bytes one render may write: 64 MiB, far past any context a model has (128k tokens are well
/// under 1 MiB of text), so a template cannot fill memory through its output.
pub const RENDER_MAX_BYTES: usize = 64 << 20;

/// The render's output, refused once it would pass RENDER_MAX_BYTES.
struct Capped(Vec<u8>);

impl std::io::Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + b.len() > RENDER_MAX_BYTES {
            return Err(std::io::Error::other(format!(
                "the output passes {RENDER_MAX_BYTES} bytes"
            )));
        }
        self.0.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl ChatTemplate {
    /// Parses `source`; `name` (a file or model path) prefixes every error. A template using syntax
    /// this engine lacks is refused here with the line it is on.
    pub fn new(name: &str, source: &str) -> Result<ChatTemplate> {
        let mut env = Environment::new();
        env.set_fuel(Some(RENDER_FUEL));
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.set_formatter(|out, state, v| {
            if v.is_undefined() || v.as_str().is_some() {
                minijinja::escape_formatter(out, state, v)
            } else {
                // Jinja2 prints str(value): None, True, [1, 'a'], {'k': 2.0}
                out.write_str(&pyjson::py_str(v)).map_err(Error_::from)
            }
        });
        env.add_function("raise_exception", |msg: Value| -> std::result::Result<Value, Error_> {
            Err(Error_::new(
                ErrorKind::InvalidOperation,
                format!("{RAISED}{}", pyjson::py_str(&msg)),
            ))
        });
        let clock = Arc::new(AtomicI64::new(i64::MIN));
        let c = clock.clone();
        env.add_function("strftime_now", move |fmt: String| {
            let pinned = Some(c.load(Ordering::Relaxed)).filter(|&t| t != i64::MIN);
            strftime::strftime_now(&fmt, pinned).map_err(|e| Error_::new(ErrorKind::InvalidOperation, e))
        });
        // Jinja2: None is not iterable (templates test `tools is iterable` before `tools | length`);
        // minijinja's own test says it is. Undefined iterates as empty in both.
        env.add_test("iterable", |v: Value| !v.is_none() && v.try_iter().is_ok());
        env.add_filter("tojson", |v: Value, args: Rest<Value>| {
            // json.dumps' arguments, positional or by keyword (a kwargs value comes last)
            let mut pos: Vec<Value> = args.0;
            let kw = match pos.last() {
                Some(l) if l.is_kwargs() => Kwargs::try_from(pos.pop().unwrap())?,
                _ => Kwargs::from_iter(std::iter::empty::<(String, Value)>()),
            };
            if pos.len() > 4 {
                return Err(Error_::new(
                    ErrorKind::TooManyArguments,
                    "tojson takes at most 4 arguments",
                ));
            }
            pos.resize(4, Value::UNDEFINED);
            let p = |i: usize| Some(pos[i].clone()).filter(|v| !v.is_undefined());
            let o = pyjson::JsonOpts::from_args([p(0), p(1), p(2), p(3)], &kw)?;
            pyjson::dumps(&v, &o).map(Value::from)
        });
        env.add_filter("string", |v: Value| pyjson::py_str(&v));
        env.add_template_owned(TEMPLATE, rewrite_generation_blocks(source))
            .map_err(|e| template_error(name, &e))?;
        Ok(ChatTemplate {
            env,
            name: name.to_string(),
            special: Vec::new(),
            clock,
        })
    }

    /// Pins the instant `strftime_now` formats (seconds since the epoch, UTC), for reproducible
    /// prompts; by default it reads the system clock.
    pub fn with_clock(self, unix_secs: i64) -> ChatTemplate {
        self.clock.store(unix_secs, Ordering::Relaxed);
        self
    }

    /// Sets a special token the template sees (`bos_token`, ...); None leaves it undefined.
    pub fn with_token(mut self, key: &str, value: Option<&str>) -> ChatTemplate {
        self.special.retain(|(k, _)| k != key);
        if let Some(v) = value {
            self.special.push((key.to_string(), v.to_string()));
        }
        self
    }

    /// The conversation rendered as transformers' `apply_chat_template(messages, tokenize=False,
    /// add_generation_prompt=..., tools=..., **extra)` renders it.
    pub fn render(&self, messages: &[ChatMessage], opts: &ChatOptions) -> Result<String> {
        let bad = |detail: String| Error::ChatTemplate {
            template: self.name.clone(),
            detail,
        };
        if messages.is_empty() {
            // transformers refuses an empty conversation before rendering
            return Err(bad("the conversation is empty: give at least one message".into()));
        }
        let tools = match &opts.tools {
            None => Value::from(()),
            Some(text) => {
                let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("tools: not valid JSON: {e}")))?;
                if v.kind() != minijinja::value::ValueKind::Seq {
                    return Err(bad("tools: must be a JSON list of tool schemas".into()));
                }
                v
            }
        };
        let mut ctx: Vec<(String, Value)> = vec![
            ("messages".into(), Value::from_serialize(messages)),
            ("tools".into(), tools),
            ("documents".into(), Value::from(())),
            ("add_generation_prompt".into(), Value::from(opts.add_generation_prompt)),
        ];
        let mut set = |k: &str, v: Value| {
            ctx.retain(|(n, _)| n != k);
            ctx.push((k.to_string(), v));
        };
        for (k, v) in &self.special {
            set(k, Value::from(v.as_str()));
        }
        if let Some(t) = opts.enable_thinking {
            set("enable_thinking", Value::from(t));
        }
        for (k, v) in &opts.extra {
            set(k, Value::from_serialize(v));
        }
        let ctx: Value = ctx.into_iter().collect();
        let tpl = self
            .env
            .get_template(TEMPLATE)
            .map_err(|e| template_error(&self.name, &e))?;
        let mut out = Capped(Vec::new());
        tpl.render_captured_to(ctx, &mut out).map_err(|e| match e.kind() {
            ErrorKind::OutOfFuel => bad(format!(
                "rendering took more than {RENDER_FUEL} steps (a runaway loop?)"
            )),
            _ => template_error(&self.name, &e),
        })?;
        // every write was a &str's bytes
        String::from_utf8(out.0).map_err(|e| bad(format!("output is not UTF-8: {e}")))
    }
}

type Error_ = minijinja::Error;

/// Marks an error that the template raised itself (its own words follow).
const RAISED: &str = "the template refuses: ";

/// An engine error as ours: the template's own message when it raised one, else minijinja's
/// description with the line (and the causes' chain).
fn template_error(name: &str, e: &Error_) -> Error {
    let mut detail = match e.detail() {
        Some(d) if d.starts_with(RAISED) => d.to_string(),
        _ => e.to_string(),
    };
    if let (Some(line), false) = (e.line(), detail.contains(" line ")) {
        detail = format!("line {line}: {detail}");
    }
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        detail.push_str(&format!(": {s}"));
        src = s.source();
    }
    Error::ChatTemplate {
        template: name.to_string(),
        detail,
    }
}

/// transformers' AssistantTracker extension adds a `{% generation %}...{% endgeneration %}` block
/// that, when no assistant mask is asked for, renders its body unchanged. minijinja has no such
/// tag, so the tags become `{% if true %}` / `{% endif %}`: block tags too, so trim_blocks and
/// lstrip_blocks treat them the same, and whitespace-control marks (`-`, `+`) are kept.
fn rewrite_generation_blocks(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(i) = rest.find("{%") {
        out.push_str(&rest[..i]);
        let tag = &rest[i..];
        // the close after the open's two bytes: in `{%}` the `%}` overlapping the open is not one
        // (found by the chat_template fuzz target: it sliced [2..1] and panicked)
        let Some(end) = tag[2..].find("%}").map(|e| e + 2) else {
            break;
        };
        let inner = &tag[2..end];
        let (lead, body) = match inner.strip_prefix(['-', '+']) {
            Some(b) => (&inner[..1], b),
            None => ("", inner),
        };
        let (body, trail) = match body.strip_suffix(['-', '+']) {
            Some(b) => (b, &body[body.len() - 1..]),
            None => (body, ""),
        };
        let word = match body.trim() {
            "generation" => Some("if true"),
            "endgeneration" => Some("endif"),
            _ => None,
        };
        match word {
            Some(w) => out.push_str(&format!("{{%{lead} {w} {trail}%}}")),
            None => out.push_str(&tag[..end + 2]),
        }
        rest = &tag[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(src: &str, msgs: &[ChatMessage], o: &ChatOptions) -> Result<String> {
        ChatTemplate::new("test", src)?.render(msgs, o)
    }

    #[test]
    fn generation_tags_become_plain_blocks() {
        let s = "a\n  {%- generation -%}\nx{% endgeneration +%}\nb{%if 1%}c{% endif %}";
        assert_eq!(
            rewrite_generation_blocks(s),
            "a\n  {%- if true -%}\nx{% endif +%}\nb{%if 1%}c{% endif %}"
        );
    }

    #[test]
    fn raise_exception_names_the_templates_message() {
        let m = [ChatMessage::new("system", "s")];
        let e = render(
            "{{ raise_exception('System role not supported') }}",
            &m,
            &ChatOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("test") && e.contains("System role not supported"), "{e}");
    }

    // The expected text is what transformers 5.24 renders for the same template and message.
    #[test]
    fn python_methods_values_and_whitespace() {
        let m = [ChatMessage::new("user", "  Hi there  ")];
        let src = "{% for m in messages %}\n  {{ m.content.strip().split(' ') }} {{ m.role.startswith('us') }}\n{% endfor %}{{ none }}";
        assert_eq!(
            render(src, &m, &ChatOptions::default()).unwrap(),
            "  ['Hi', 'there'] True\nNone"
        );
    }
}
