//! The engine's own thread. `ServeEngine` holds device state that is not meant to cross threads,
//! so it is created here and only ever touched here; handlers talk to it through a command
//! channel, and each request's tokens come back through that request's own channel.
//!
//! The loop: take every queued command (blocking on the channel while the engine is idle, so an
//! idle server burns no CPU), run one step, hand each event to its request's channel. A request
//! whose channel is closed (the handler is gone: its client disconnected) is aborted at once, which
//! frees its KV blocks; handlers also send `Abort` themselves (stop strings, disconnects while still
//! waiting in the queue).
use super::metrics::Metrics;
use crate::backend::pick_device;
use crate::engine::Engine;
use crate::model::tokenizer::Tokenizer;
use crate::serve::{Event, Request, RequestId, ServeEngine, ServeOptions};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// What a handler asks of the engine thread.
pub enum Cmd {
    /// Queue `req`; its messages go to `tx`, tagged with `index` (the choice it makes).
    Submit {
        req: Request,
        index: usize,
        tx: UnboundedSender<(usize, Msg)>,
    },
    /// Cancel a request (its client left, or a stop string ended it); unknown ids are ignored.
    Abort(RequestId),
    /// Cancel every request (the shutdown's grace period ran out); their channels close.
    AbortAll,
    /// End the thread.
    Stop,
}

/// What the engine thread tells a request's handler.
#[derive(Debug)]
pub enum Msg {
    /// `add` took the request.
    Accepted,
    /// `add` refused it: the engine's reason.
    Refused(String),
    Token(Event),
    /// The step failed on the device; the request is gone.
    Failed(String),
}

/// What the server needs from the loaded model.
pub struct Loaded {
    pub tokenizer: Option<Tokenizer>,
    pub max_ctx: usize,
    pub vocab_size: usize,
    pub device: String,
    pub model_type: String,
}

/// Where the model comes from.
pub struct LoadSpec {
    pub model: PathBuf,
    pub device: Option<String>,
    pub ctx: usize,
}

/// Starts the thread: it loads the model, reports through `ready` (the error text on failure, and
/// then ends), and serves commands until `Stop` or every sender is gone.
pub fn spawn(
    spec: LoadSpec,
    opts: ServeOptions,
    metrics: Arc<Metrics>,
    ready: tokio::sync::oneshot::Sender<Result<Loaded, String>>,
) -> (mpsc::Sender<Cmd>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name("wgllm-engine".into())
        .spawn(move || {
            let loaded = load(&spec, &opts);
            let mut s = match loaded {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            };
            let info = Loaded {
                tokenizer: s.engine.tokenizer.take(),
                max_ctx: s.engine.max_ctx,
                vocab_size: s.engine.cfg.vocab_size,
                device: s.engine.dev.name(),
                model_type: s.engine.cfg.model_type.clone(),
            };
            metrics.set_engine(&s.stats());
            if ready.send(Ok(info)).is_err() {
                return;
            }
            serve(&mut s, &rx, &metrics);
        })
        .expect("spawning the engine thread");
    (tx, h)
}

fn load(spec: &LoadSpec, opts: &ServeOptions) -> Result<ServeEngine, String> {
    let dev = pick_device(spec.device.as_deref()).map_err(|e| e.to_string())?;
    let e = Engine::load(&spec.model, dev, spec.ctx, &mut |_, _| {}).map_err(|e| e.to_string())?;
    ServeEngine::new(e, opts).map_err(|e| e.to_string())
}

type Live = HashMap<RequestId, (usize, UnboundedSender<(usize, Msg)>)>;

/// Returns false on `Stop`.
fn apply(s: &mut ServeEngine, live: &mut Live, cmd: Cmd) -> bool {
    match cmd {
        Cmd::Submit { req, index, tx } => {
            let id = req.id;
            match s.add(req) {
                Ok(()) => {
                    if tx.send((index, Msg::Accepted)).is_ok() {
                        live.insert(id, (index, tx));
                    } else {
                        s.abort(id);
                    }
                }
                Err(e) => {
                    let _ = tx.send((index, Msg::Refused(e.to_string())));
                }
            }
        }
        Cmd::Abort(id) => {
            s.abort(id);
            live.remove(&id);
        }
        Cmd::AbortAll => {
            for id in live.keys() {
                s.abort(*id);
            }
            live.clear();
        }
        Cmd::Stop => return false,
    }
    true
}

fn serve(s: &mut ServeEngine, rx: &mpsc::Receiver<Cmd>, metrics: &Metrics) {
    let mut live: Live = HashMap::new();
    loop {
        if s.is_idle() {
            // nothing to run: wait for work without spinning
            match rx.recv() {
                Ok(cmd) => {
                    if !apply(s, &mut live, cmd) {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
        loop {
            match rx.try_recv() {
                Ok(cmd) => {
                    if !apply(s, &mut live, cmd) {
                        return;
                    }
                }
                Err(mpsc::TryRecvError::Disconnected) => return,
                Err(mpsc::TryRecvError::Empty) => break,
            }
        }
        if !s.is_idle() {
            match s.step() {
                Ok(events) => {
                    metrics.add_generated(events.len() as u64);
                    for ev in events {
                        let id = ev.id;
                        let done = ev.finish.is_some();
                        let Some((index, tx)) = live.get(&id) else { continue };
                        if tx.send((*index, Msg::Token(ev))).is_err() {
                            // the handler is gone (client disconnected): free the blocks now
                            s.abort(id);
                            live.remove(&id);
                        } else if done {
                            live.remove(&id);
                        }
                    }
                }
                Err(e) => {
                    log::error!("engine step failed: {e}");
                    for (id, (index, tx)) in live.drain() {
                        s.abort(id);
                        let _ = tx.send((index, Msg::Failed(e.to_string())));
                    }
                }
            }
        }
        metrics.set_engine(&s.stats());
    }
}
