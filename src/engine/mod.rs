//! The engine: a loaded model on one backend; one sequence's prefill, decode and sampling over its
//! own paged KV pool (model/lone.rs). Serving many sequences at once: serve/engine.rs.
pub mod chat;
mod penalties;
pub mod sampler;

use crate::backend::{Backend, Capability};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::model::arch::Weights;
use crate::model::config::Config;
use crate::model::gguf::Gguf;
use crate::model::gguf_config::config_from_gguf;
use crate::model::lone::{self, rows_of, Cache, Workspace};
use crate::model::safetensors::SafeTensors;
use crate::model::tokenizer::Tokenizer;
use crate::model::{Logits, Mix, Source};
use crate::op::Op;
use penalties::Penalizer;
use sampler::{log_softmax, top_logprobs, Sampler};
use std::collections::HashMap;
use std::path::Path;

/// The token id a device read back (the first u32), or an error when it sent fewer than 4 bytes
/// (a device fault must not be a panic).
fn first_id(b: &[u8]) -> Result<u32> {
    match b {
        [a, b, c, d, ..] => Ok(u32::from_le_bytes([*a, *b, *c, *d])),
        _ => Err(Error::Other(format!(
            "the device read back {} bytes for a token id (4 expected)",
            b.len()
        ))),
    }
}

/// A Hugging Face model directory's files as bytes (`Engine::load_bytes`).
pub struct ModelBytes<'a> {
    pub config: &'a [u8],
    pub safetensors: Vec<u8>,
    pub tokenizer: Option<&'a [u8]>,
    pub tokenizer_config: Option<&'a [u8]>,
    pub generation_config: Option<&'a [u8]>,
}

pub struct Engine {
    pub cfg: Config,
    pub weights: Weights,
    pub dev: Box<dyn Backend>,
    pub tokenizer: Option<Tokenizer>,
    pub eos: Vec<u32>,
    pub max_ctx: usize,
    /// by (tokens, logits rows)
    workspaces: HashMap<(usize, usize), Workspace>,
    /// logits rows of the last forward (1, or its tokens for `Logits::All`)
    last_rows: usize,
}

/// One generated step: the token and, when asked, its logprob and the top-k alternatives.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Step {
    pub token: u32,
    pub logprob: Option<f64>,
    pub top: Vec<(u32, f64)>,
}

impl Engine {
    /// Loads a Hugging Face model directory, or a GGUF file, onto `dev`.
    pub fn load(
        dir: &Path,
        dev: Box<dyn Backend>,
        max_ctx: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Engine> {
        if dir.is_file() || dir.extension().is_some_and(|e| e == "gguf") {
            return Self::load_gguf(dir, dev, max_ctx, progress);
        }
        let read = |name: &str| -> Result<Option<Vec<u8>>> {
            let p = dir.join(name);
            match std::fs::read(&p) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(Error::File {
                    path: p.display().to_string(),
                    detail: e.to_string(),
                }),
            }
        };
        let cfg = Config::from_file(&dir.join("config.json"))?;
        let st = SafeTensors::open_dir(dir)?;
        let tokenizer = Tokenizer::from_dir(dir)?;
        let gen = read("generation_config.json")?.map(|b| (dir.join("generation_config.json"), b));
        Self::from_parts(cfg, st, tokenizer, gen, dev, max_ctx, progress)
    }

    /// A Hugging Face model from bytes rather than a directory (the fuzz targets, embedders that
    /// hold the files in memory): each file is checked as `load` checks it; `dir` only names them
    /// in errors.
    pub fn load_bytes(
        dir: &Path,
        files: ModelBytes,
        dev: Box<dyn Backend>,
        max_ctx: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Engine> {
        let cfg = Config::parse_bytes(files.config, &dir.join("config.json"))?;
        let st = SafeTensors::from_bytes(&dir.join("model.safetensors"), files.safetensors)?;
        let tokenizer = match files.tokenizer {
            None => None,
            Some(t) => Some(Tokenizer::from_bytes(
                &dir.join("tokenizer.json").display().to_string(),
                t,
                files
                    .tokenizer_config
                    .map(|c| (dir.join("tokenizer_config.json").display().to_string(), c)),
            )?),
        };
        let gen = files
            .generation_config
            .map(|b| (dir.join("generation_config.json"), b.to_vec()));
        Self::from_parts(cfg, st, tokenizer, gen, dev, max_ctx, progress)
    }

    #[allow(clippy::too_many_arguments)]
    fn from_parts(
        cfg: Config,
        st: SafeTensors,
        tokenizer: Option<Tokenizer>,
        generation_config: Option<(std::path::PathBuf, Vec<u8>)>,
        dev: Box<dyn Backend>,
        max_ctx: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Engine> {
        let max_ctx = max_ctx.min(cfg.max_position_embeddings);
        let weights = Weights::load(&cfg, &Source::File(&st), dev.as_ref(), max_ctx, progress)?;
        let mut eos = cfg.eos_token_ids.clone();
        if let Some((gen, bytes)) = generation_config {
            let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| Error::File {
                path: gen.display().to_string(),
                detail: format!("not valid JSON: {e}"),
            })?;
            let bad = |x: &serde_json::Value| Error::File {
                path: gen.display().to_string(),
                detail: format!(
                    "field `eos_token_id`: expected token ids within the vocabulary of {}, got {x}",
                    cfg.vocab_size
                ),
            };
            let id = |x: &serde_json::Value| {
                x.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|&n| (n as usize) < cfg.vocab_size)
                    .ok_or_else(|| bad(x))
            };
            match v.get("eos_token_id") {
                None | Some(serde_json::Value::Null) => {}
                Some(serde_json::Value::Array(a)) => {
                    for x in a {
                        eos.push(id(x)?);
                    }
                }
                Some(x) => eos.push(id(x)?),
            }
        }
        eos.sort();
        eos.dedup();
        Ok(Engine {
            cfg,
            weights,
            dev,
            tokenizer,
            eos,
            max_ctx,
            workspaces: HashMap::new(),
            last_rows: 1,
        })
    }

    /// Loads a GGUF file: config from its metadata, its tokenizer and chat template, its weights
    /// (quantized blocks stay quantized on the device).
    pub fn load_gguf(
        path: &Path,
        dev: Box<dyn Backend>,
        max_ctx: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Engine> {
        Self::from_gguf(Gguf::open(path)?, dev, max_ctx, progress)
    }

    /// `load_gguf` from the file's bytes (`path` names it in errors).
    pub fn load_gguf_bytes(
        path: &Path,
        bytes: Vec<u8>,
        dev: Box<dyn Backend>,
        max_ctx: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Engine> {
        Self::from_gguf(Gguf::from_bytes(path, bytes)?, dev, max_ctx, progress)
    }

    fn from_gguf(
        g: Gguf,
        dev: Box<dyn Backend>,
        max_ctx: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Engine> {
        let cfg = config_from_gguf(&g)?;
        let tokenizer = if g.meta("tokenizer.ggml.model").is_some() {
            Some(Tokenizer::from_gguf(&g)?)
        } else {
            None
        };
        let max_ctx = max_ctx.min(cfg.max_position_embeddings);
        let weights = Weights::load(&cfg, &Source::Gguf(&g), dev.as_ref(), max_ctx, progress)?;
        Ok(Engine {
            eos: cfg.eos_token_ids.clone(),
            cfg,
            weights,
            dev,
            tokenizer,
            max_ctx,
            workspaces: HashMap::new(),
            last_rows: 1,
        })
    }

    /// Random weights of a named shape (benchmarks), `mix` saying which matrices take which type.
    pub fn random(
        cfg: Config,
        dtype: DType,
        mix: Mix,
        dev: Box<dyn Backend>,
        max_ctx: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Engine> {
        let weights = Weights::load(
            &cfg,
            &Source::Random { dtype, seed: 1, mix },
            dev.as_ref(),
            max_ctx,
            progress,
        )?;
        Ok(Engine {
            eos: cfg.eos_token_ids.clone(),
            cfg,
            weights,
            dev,
            tokenizer: None,
            max_ctx,
            workspaces: HashMap::new(),
            last_rows: 1,
        })
    }

    pub fn new_cache(&self) -> Result<Cache> {
        Cache::new(&self.cfg, self.dev.as_ref(), self.max_ctx)
    }

    fn workspace(&mut self, t: usize, rows: usize) -> Result<&Workspace> {
        if !self.workspaces.contains_key(&(t, rows)) {
            // keep the decode workspace; drop other prefill sizes (their memory adds up)
            self.workspaces.retain(|&k, _| k == (1, 1));
            self.dev.forget_bind_groups();
            let ws = Workspace::new(&self.cfg, self.dev.as_ref(), t, rows)?;
            self.workspaces.insert((t, rows), ws);
        }
        Ok(&self.workspaces[&(t, rows)])
    }

    /// Records a forward over `ids` at the cache's current length; logits stay on the device.
    pub fn forward(
        &mut self,
        cache: &mut Cache,
        ids: &[u32],
        which: Logits,
        hidden: &mut dyn FnMut(usize, &dyn Backend, &crate::Tensor) -> Result<()>,
    ) -> Result<()> {
        if ids.is_empty() {
            return Err(Error::Other("empty prompt: give at least one token".into()));
        }
        if cache.len() + ids.len() > cache.capacity() {
            return Err(Error::Other(format!(
                "prompt too long: {} tokens after {} cached exceed the context of {} tokens",
                ids.len(),
                cache.len(),
                cache.capacity()
            )));
        }
        if let Some(&bad) = ids.iter().find(|&&i| i as usize >= self.cfg.vocab_size) {
            return Err(Error::Other(format!(
                "token id {bad} is outside the vocabulary of {}",
                self.cfg.vocab_size
            )));
        }
        let (t, rows) = (ids.len(), rows_of(&which, ids.len()));
        self.last_rows = rows;
        self.workspace(t, rows)?;
        let ws = &self.workspaces[&(t, rows)];
        let dev = self.dev.as_ref();
        dev.upload(&ws.ids, &ids.iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<_>>())?;
        lone::forward(&self.weights, ws, cache, &ws.ids, which, &self.cfg, dev, hidden)
    }

    /// The logits rows of the last forward over `t` tokens ([rows, V] f32 from the device).
    pub fn logits(&self, t: usize, rows: usize) -> Result<Vec<f32>> {
        let ws = self.ws_of(t)?;
        let v = ws.logits().view(0, &[rows, self.cfg.vocab_size])?;
        Ok(DType::F32.decode_f32(&self.dev.download(&v)?))
    }

    /// The workspace of the last forward, which was over `t` tokens.
    fn ws_of(&self, t: usize) -> Result<&Workspace> {
        self.workspaces
            .get(&(t, self.last_rows))
            .ok_or_else(|| Error::Other(format!("no forward over {t} tokens to read the logits of")))
    }

    /// Picks the next token after a forward over `t` tokens (Logits::Last). Greedy without logprobs
    /// runs argmax on the device and reads back 4 bytes; otherwise the logits row comes back.
    /// Penalties and min-p need the sequence's token counts, which `generate` keeps: here they are
    /// refused.
    pub fn choose(&mut self, t: usize, sampler: &mut Sampler, logprobs: Option<usize>) -> Result<Step> {
        let s = sampler.cfg();
        if s.has_penalties() || s.uses_min_p() {
            return Err(Error::Other(
                "Engine::choose keeps no token history: penalties and min-p run through Engine::generate".into(),
            ));
        }
        self.choose_with(t, sampler, logprobs, None)
    }

    /// `choose`, with the sequence's penalties and min-p (when on) run on the device over the
    /// logits row first. The logprobs are the model's, before penalties and min-p (as vLLM
    /// reports them by default); with those on they come only when asked.
    fn choose_with(
        &mut self,
        t: usize,
        sampler: &mut Sampler,
        logprobs: Option<usize>,
        pen: Option<&Penalizer>,
    ) -> Result<Step> {
        let ws = self.ws_of(t)?;
        let raw = ws.logits().view(0, &[1, self.cfg.vocab_size])?;
        let row = match pen {
            Some(p) => p.apply(self.dev.as_ref(), &raw)?,
            None => raw.clone(),
        };
        if sampler.cfg().is_greedy() && logprobs.is_none() {
            self.dev.run(&Op::Argmax, &[&row], &[ws.next()])?;
            let b = self.dev.download(ws.next())?;
            return Ok(Step {
                token: first_id(&b)?,
                logprob: None,
                top: vec![],
            });
        }
        let logits = DType::F32.decode_f32(&self.dev.download(&row)?);
        let token = sampler.sample(&logits);
        let lp = match (pen, logprobs) {
            (None, _) => Some(log_softmax(&logits)),
            (Some(_), Some(_)) => Some(log_softmax(&DType::F32.decode_f32(&self.dev.download(&raw)?))),
            (Some(_), None) => None,
        };
        Ok(Step {
            token,
            logprob: lp.as_ref().map(|lp| lp[token as usize]),
            top: match (lp, logprobs) {
                (Some(lp), Some(k)) => top_logprobs(&lp, k),
                _ => vec![],
            },
        })
    }

    /// Greedy decode on a device with pipelined decode (`Capability::PipelinedDecode`), the token
    /// never leaving the device between steps: step i+1's embedding reads step i's argmax output,
    /// step i+1 is recorded and submitted before step i's token is read back (asynchronously), so
    /// CPU recording overlaps device execution. Each step is one submit. A stop (EOS, callback) is
    /// seen one step late; that extra step is discarded.
    fn generate_pipelined(
        &mut self,
        mut cache: Cache,
        prompt: &[u32],
        n: usize,
        stop_at_eos: bool,
        on_token: &mut dyn FnMut(&Step) -> bool,
    ) -> Result<Vec<Step>> {
        // the decode workspace first: making it may drop other prefill sizes, never the current one
        self.workspace(1, 1)?;
        self.forward(&mut cache, prompt, Logits::Last, &mut |_, _, _| Ok(()))?;
        let t0 = prompt.len();
        let argmax = |e: &Engine, t: usize| -> Result<crate::Tensor> {
            let ws = e.ws_of(t)?;
            let row = ws.logits().view(0, &[1, e.cfg.vocab_size])?;
            e.dev.run(&Op::Argmax, &[&row], &[ws.next()])?;
            Ok(ws.next().clone())
        };
        let mut prev = argmax(self, t0)?;
        let dev = self.dev.as_ref();
        let mut pending = std::collections::VecDeque::new();
        pending.push_back(dev.submit_readback(&prev)?);
        let mut recorded = 1;
        let mut steps = Vec::new();
        while let Some(rb) = pending.pop_front() {
            if recorded < n {
                let ws = &self.workspaces[&(1, 1)];
                let (w, c, ids) = (&self.weights, &self.cfg, &prev.view(0, &[1])?);
                lone::forward(w, ws, &mut cache, ids, Logits::Last, c, dev, &mut |_, _, _| Ok(()))?;
                prev = argmax(self, 1)?;
                pending.push_back(dev.submit_readback(&prev)?);
                recorded += 1;
            }
            let b = rb.wait()?;
            let s = Step {
                token: first_id(&b)?,
                logprob: None,
                top: vec![],
            };
            let tok = s.token;
            let go_on = on_token(&s);
            steps.push(s);
            if !go_on || (stop_at_eos && self.eos.contains(&tok)) || steps.len() == n {
                break;
            }
        }
        // drain what is still in flight so its buffers are not mapped past this call
        for rb in pending {
            rb.wait()?;
        }
        Ok(steps)
    }

    /// Prefill + decode of up to `n` tokens, calling `on_token` for each; stops at EOS (when
    /// `stop_at_eos`) or when `on_token` returns false. With penalties or min-p on, the sequence's
    /// token counts live on the device and the ops run over each step's logits row before the
    /// choice (greedy: argmax on the device; sampling: the row comes back).
    pub fn generate(
        &mut self,
        prompt: &[u32],
        n: usize,
        sampler: &mut Sampler,
        logprobs: Option<usize>,
        stop_at_eos: bool,
        on_token: &mut dyn FnMut(&Step) -> bool,
    ) -> Result<Vec<Step>> {
        sampler.cfg().check()?;
        let mut cache = self.new_cache()?;
        if prompt.len() + n > cache.capacity() {
            return Err(Error::Other(format!(
                "prompt too long: {} prompt tokens + {n} new exceed the context of {} tokens",
                prompt.len(),
                cache.capacity()
            )));
        }
        let pipelined = self.dev.capability(Capability::PipelinedDecode).is_yes();
        let s = sampler.cfg();
        let plain = !s.has_penalties() && !s.uses_min_p();
        if s.is_greedy() && logprobs.is_none() && pipelined && plain {
            return self.generate_pipelined(cache, prompt, n, stop_at_eos, on_token);
        }
        let mut steps = Vec::new();
        self.forward(&mut cache, prompt, Logits::Last, &mut |_, _, _| Ok(()))?;
        // after the forward, which has checked the prompt's ids against the vocabulary
        let mut pen = Penalizer::new(self.dev.as_ref(), sampler.cfg(), self.cfg.vocab_size, prompt)?;
        let mut t = prompt.len();
        for i in 0..n {
            let s = self.choose_with(t, sampler, logprobs, pen.as_ref())?;
            let tok = s.token;
            let go_on = on_token(&s);
            steps.push(s);
            if !go_on || (stop_at_eos && self.eos.contains(&tok)) || i + 1 == n {
                break;
            }
            if let Some(p) = pen.as_mut() {
                p.push(self.dev.as_ref(), tok)?;
            }
            self.forward(&mut cache, &[tok], Logits::Last, &mut |_, _, _| Ok(()))?;
            t = 1;
        }
        Ok(steps)
    }
}
