//! `wgllm chat`: a conversation with a model through its chat template. Each line read is a user
//! message; the answer streams back and joins the history. `/reset` forgets the history (the
//! system prompt stays), `/exit` (or end of input) leaves, Ctrl-C stops the answer being written
//! without leaving. When stdin is not a terminal there is no banner and no prompt marker, so the
//! REPL can be driven by a pipe (one message a line); `--json` prints one object per turn.
use super::run::{check, print_piece, progress};
use super::sampling_args::SamplingArgs;
use crate::backend::pick_device;
use crate::engine::chat::Conversation;
use crate::engine::sampler::Sampler;
use crate::engine::{Engine, Step};
use crate::error::{Error, Result};
use crate::model::stream::StreamDecoder;
use clap::Args;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Args)]
pub struct ChatArgs {
    /// A Hugging Face model directory or a .gguf file (or a directory holding one); it must have a
    /// tokenizer with a chat template
    #[arg(long)]
    model: PathBuf,
    /// cpu, wgpu, or wgpu:NAME. Default: the fastest GPU, else cpu (`wgllm devices` marks it).
    #[arg(long)]
    device: Option<String>,
    /// The system prompt, kept through /reset
    #[arg(long)]
    system: Option<String>,
    #[command(flatten)]
    sampling: SamplingArgs,
    /// The most tokens of one answer (>= 1)
    #[arg(short = 'n', long = "max-tokens", default_value_t = 512, allow_negative_numbers = true,
          value_parser = check::int_at_least("-n/--max-tokens", 1))]
    n: usize,
    /// Context length (>= 2), capped by the model's max_position_embeddings; the oldest exchanges
    /// are dropped when the conversation outgrows it
    #[arg(long, default_value_t = 4096, allow_negative_numbers = true, value_parser = check::int_at_least("--ctx", 2))]
    ctx: usize,
    /// One JSON object per turn (prompt_ids, generated_ids, text, finish_reason) instead of text
    #[arg(long)]
    json: bool,
}

/// Set by Ctrl-C while an answer is being written; the answer stops at the next token.
static STOP: AtomicBool = AtomicBool::new(false);
static ANSWERING: AtomicBool = AtomicBool::new(false);

pub fn run(a: ChatArgs) -> Result<ExitCode> {
    let dir = check::model(&a.model, true)?;
    let dev = pick_device(a.device.as_deref())?;
    let mut e = Engine::load(&dir, dev, a.ctx, &mut progress("loading weights"))?;
    let tok = e.tokenizer.take().ok_or_else(|| {
        Error::Other(format!(
            "{}: no tokenizer (tokenizer.json or tokenizer.ggml metadata); chat needs one with a chat template",
            dir.display()
        ))
    })?;
    let mut conv = Conversation::new(a.system.as_deref());
    // A template that cannot render a conversation is refused before the first message.
    conv.push("user", "hello");
    conv.prompt_ids(&tok, usize::MAX)?;
    conv.reset();

    let tty = std::io::stdin().is_terminal();
    ctrlc::set_handler(move || {
        if ANSWERING.load(Ordering::SeqCst) {
            STOP.store(true, Ordering::SeqCst);
        } else {
            eprint!("\n(/exit or Ctrl-D leaves)\n>>> ");
        }
    })
    .map_err(|err| Error::Other(format!("cannot catch Ctrl-C: {err}")))?;
    if tty {
        eprintln!(
            "[{}] chatting with {}: /reset forgets the conversation, /exit leaves, Ctrl-C stops an answer",
            e.dev.name(),
            dir.display()
        );
    }
    let mut lines = std::io::stdin().lock().lines();
    let mut turn = 0;
    loop {
        if tty {
            eprint!(">>> ");
        }
        let Some(line) = lines.next() else { break };
        let line = line.map_err(|err| Error::Other(format!("stdin: {err}")))?;
        let msg = line.trim();
        match msg {
            "" => continue,
            "/exit" | "/quit" | "/bye" => break,
            "/reset" | "/clear" => {
                conv.reset();
                if tty {
                    eprintln!("(conversation forgotten)");
                }
                continue;
            }
            m if m.starts_with('/') => {
                eprintln!("unknown command {m}: /reset, /exit");
                continue;
            }
            _ => {}
        }
        conv.push("user", msg);
        // Leave room for at least one token of answer.
        let (prompt, dropped) = match conv.prompt_ids(&tok, e.max_ctx - 1) {
            Ok(p) => p,
            Err(err) => {
                conv.pop();
                eprintln!("error: {err}");
                continue;
            }
        };
        if dropped > 0 {
            eprintln!("(the conversation outgrew the context: its {dropped} oldest messages were dropped)");
        }
        let n = a.n.min(e.max_ctx - prompt.len());
        let mut sampler = Sampler::new(a.sampling.sampling());
        let mut stream = StreamDecoder::new(&[]);
        let mut failed = None;
        STOP.store(false, Ordering::SeqCst);
        ANSWERING.store(true, Ordering::SeqCst);
        let json = a.json;
        let steps = e.generate(&prompt, n, &mut sampler, None, true, &mut |s: &Step| {
            print_piece(&mut stream, &tok, s.token, json, &mut failed) && !STOP.load(Ordering::SeqCst)
        });
        ANSWERING.store(false, Ordering::SeqCst);
        let steps = steps?;
        if let Some(err) = failed {
            return Err(err);
        }
        let rest = stream.finish();
        let interrupted = STOP.swap(false, Ordering::SeqCst);
        let eos = steps.last().is_some_and(|s| e.eos.contains(&s.token));
        let reason = if interrupted {
            "interrupted"
        } else if eos {
            "eos"
        } else {
            "length"
        };
        // The answer as text: the tokens before an end-of-sequence token (the template adds its own).
        let answer_ids: Vec<u32> = steps.iter().map(|s| s.token).filter(|t| !e.eos.contains(t)).collect();
        let answer = tok.decode(&answer_ids)?;
        conv.push("assistant", &answer);
        turn += 1;
        if json {
            let out = serde_json::json!({
                "turn": turn,
                "prompt": tok.decode(&prompt)?,
                "prompt_ids": prompt,
                "generated_ids": steps.iter().map(|s| s.token).collect::<Vec<_>>(),
                "text": answer,
                "finish_reason": reason,
                "dropped_messages": dropped,
            });
            println!("{}", serde_json::to_string(&out).unwrap());
        } else {
            println!("{rest}");
            if interrupted {
                eprintln!("(stopped)");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
