#!/usr/bin/env python3
"""Capture oracle goldens for a Qwen3.5 (Gated DeltaNet hybrid) text model (float32, CPU, eager).

    python tools/oracle/capture_qwen3_5.py --model goldens/qwen3_5-tiny/model --out goldens/qwen3_5-tiny

Same files, tensors and manifest schema as capture.py (whose helpers this script imports, so the
greedy battery, teacher-forced sequences, hidden-state hooks and top-k rule are the very same
code; capture.py itself is left untouched so that goldens/qwen3-tiny re-captures byte for byte,
its manifest records capture.py's sha256):

  greedy.safetensors          prompt_00..prompt_15 (i32 [L]), tokens (i32 [16, 16]),
                              top_ids (i32 [16, 16, 20]), top_logprobs (f32 [16, 16, 20])
  teacher_forced.safetensors  seq_0..seq_3 (lengths 7, 64, 65, 150: across the chunk-64 boundary
                              of the chunked delta rule), top_ids_i (i32 [L, 20]), top_logprobs_i
  hidden.safetensors          hidden (f32 [n_layers + 1, 31, hidden]) for prompt_09: entry 0 the
                              embedding output, entry i the output of decoder layer i-1
  manifest.json               as capture.py, with "model": "qwen3_5", plus oracle.model_class,
                              oracle.config_model_type, oracle.linear_attention_impl (which
                              implementation of the GDN kernels ran: transformers' plain PyTorch
                              fallback, asserted), oracle.helper_script(_sha256), and `checks`.

Every forward here is a full-sequence forward without a cache, so every linear-attention layer
runs transformers' chunked delta rule (torch_chunk_gated_delta_rule, chunk 64) and the
zero-padded causal conv (causal_conv1d_fn). As a cross-check (recorded under `checks`, not a
golden) the greedy battery is replayed through transformers' cached decode path: prefill with a
cache, then one token at a time, which runs torch_recurrent_gated_delta_rule and
causal_conv1d_update; its log-probs must match the full forwards.

Deterministic (one thread, deterministic algorithms); the date is today (UTC) unless
SOURCE_DATE_EPOCH is set.
"""

import argparse
import importlib.util
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.dont_write_bytecode = True  # no tools/oracle/__pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture as C  # noqa: E402  (pins threads / deterministic algorithms on import)

import transformers  # noqa: E402
import transformers.models.qwen3_5.modeling_qwen3_5 as M  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

MODEL = "qwen3_5"
CONFIG_MODEL_TYPE = "qwen3_5_text"
MODEL_CLASS = "Qwen3_5ForCausalLM"
GDN_FUNCS = [
    "torch_chunk_gated_delta_rule",
    "torch_recurrent_gated_delta_rule",
    "causal_conv1d_fn",
    "causal_conv1d_update",
]
# The optional packages transformers would dispatch the GDN kernels to instead of its PyTorch code.
GDN_PACKAGES = ["fla", "causal_conv1d", "kernels"]
DECODE_CHECK_MAX_ABS = 1e-3  # cached (recurrent) decode vs full (chunked) forward, log-prob units (= tf tolerance)


def gdn_implementation() -> dict:
    """Assert that the GDN kernels resolve to transformers' own PyTorch functions; describe them."""
    for pkg in GDN_PACKAGES:
        assert importlib.util.find_spec(pkg) is None, f"{pkg} is installed: the oracle must use the torch fallback"
    for name in GDN_FUNCS:
        f = getattr(M, name)
        cells = dict(zip(f.__code__.co_freevars, [c.cell_contents for c in (f.__closure__ or ())]))
        assert "implementation" in cells and "torch_function" in cells, f"{name}: unexpected wrapper"
        assert cells["implementation"] is cells["torch_function"], f"{name} dispatches to {cells['implementation']}"
        assert cells["torch_function"].__module__ == M.__name__, cells["torch_function"].__module__
    return {
        "kind": "transformers torch fallback (no fla / causal-conv1d / kernels installed)",
        "prefill": "torch_chunk_gated_delta_rule (chunk_size 64) + causal_conv1d_fn (F.conv1d, zero left padding)",
        "decode": "torch_recurrent_gated_delta_rule + causal_conv1d_update (used only by checks.cached_decode)",
        "module": M.__name__,
        "goldens_use": "prefill (every golden is a cache-free full-sequence forward)",
    }


class CallCounter:
    """Counts calls of the GDN functions during a block (they are looked up as module globals)."""

    def __init__(self):
        self.counts = {n: 0 for n in GDN_FUNCS}
        self.saved = {}

    def __enter__(self):
        for n in GDN_FUNCS:
            orig = getattr(M, n)
            self.saved[n] = orig

            def wrapped(*a, _n=n, _f=orig, **k):
                self.counts[_n] += 1
                return _f(*a, **k)

            setattr(M, n, wrapped)
        return self

    def __exit__(self, *exc):
        for n, f in self.saved.items():
            setattr(M, n, f)


@torch.no_grad()
def cached_decode_check(model, prompts, tokens) -> dict:
    """Replay each greedy run with a cache: prefill the prompt, then feed the greedy tokens one by one.
    Returns the max |logprob diff| over all vocab entries vs the cache-free forwards, and whether
    the argmax (with capture.py's tie rule) agrees at every step."""
    worst = 0.0
    agree = True
    for p, toks in zip(prompts, tokens):
        seq = p.to(torch.int64)
        out = model(input_ids=seq.view(1, -1), use_cache=True)
        cache = out.cache
        for step in range(toks.shape[0]):
            ref = torch.log_softmax(C.logits_of(model, seq)[-1], dim=-1)
            got = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
            worst = max(worst, (ref - got).abs().max().item())
            ids, _ = C.topk_sorted(out.logits[0, -1].float(), 1)
            agree &= int(ids[0]) == int(toks[step])
            nxt = toks[step].to(torch.int64).view(1)
            seq = torch.cat([seq, nxt])
            out = model(input_ids=nxt.view(1, 1), cache=cache, use_cache=True)
            cache = out.cache
    return {"max_abs_logprob_diff": float(f"{worst:.3e}"), "argmax_agrees": bool(agree)}


@torch.no_grad()
def gdn_decay_stats(model, ids: torch.Tensor) -> dict:
    """Quantiles of the per-token decay exp(g) and of beta over the linear layers, for one sequence."""
    gs, betas = [], []
    hooks = []

    def pre(mod, args, kwargs):
        h = kwargs.get("hidden_states", args[0] if args else None)
        a = mod.in_proj_a(h)
        b = mod.in_proj_b(h)
        gs.append((-mod.A_log.float().exp() * torch.nn.functional.softplus(a.float() + mod.dt_bias)).exp().flatten())
        betas.append(b.sigmoid().flatten())

    for layer in model.model.layers:
        if hasattr(layer, "linear_attn"):
            hooks.append(layer.linear_attn.register_forward_pre_hook(pre, with_kwargs=True))
    try:
        C.logits_of(model, ids)
    finally:
        for h in hooks:
            h.remove()
    q = torch.tensor([0.05, 0.5, 0.95])
    d, b = torch.cat(gs), torch.cat(betas)
    return {"decay_q05_q50_q95": torch.quantile(d, q).tolist(), "beta_q05_q50_q95": torch.quantile(b, q).tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="model dir (config.json, model.safetensors, tokenizer)")
    ap.add_argument("--out", required=True, help="golden case dir")
    ap.add_argument("--seed", type=int, default=0, help="seed for prompt and sequence ids")
    ap.add_argument("--case", default=None, help="case name (default: basename of --out)")
    args = ap.parse_args()

    out = args.out
    os.makedirs(out, exist_ok=True)
    case = args.case or os.path.basename(os.path.normpath(out))

    impl = gdn_implementation()
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    cfg = model.config
    assert cfg.model_type == CONFIG_MODEL_TYPE, cfg.model_type
    assert type(model).__name__ == MODEL_CLASS, type(model).__name__
    assert "linear_attention" in cfg.layer_types and "full_attention" in cfg.layer_types, cfg.layer_types
    vocab = cfg.vocab_size
    high = vocab - C.N_SPECIAL

    for name, p in model.named_parameters():
        assert p.dtype == torch.float32, (name, p.dtype)
        assert torch.equal(p, p.to(torch.bfloat16).float()), f"{name} is not bf16-exact"
    if cfg.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "lm_head not tied"

    # Which GDN functions one cache-free forward actually calls (3 linear layers -> 3 chunked calls).
    n_linear = sum(t == "linear_attention" for t in cfg.layer_types)
    with CallCounter() as cc:
        C.logits_of(model, torch.arange(5))
    expect = {"torch_chunk_gated_delta_rule": n_linear, "torch_recurrent_gated_delta_rule": 0,
              "causal_conv1d_fn": n_linear, "causal_conv1d_update": 0}
    assert cc.counts == expect, cc.counts
    impl["calls_per_forward"] = cc.counts

    tensors = {}

    # --- greedy -----------------------------------------------------------------------------
    prompts = C.random_ids(args.seed, 1, C.PROMPT_LENGTHS, high)
    g = {}
    all_toks, all_ids, all_lps = [], [], []
    for i, p in enumerate(prompts):
        toks, ids, lps = C.greedy(model, p, C.N_NEW, C.TOP_K)
        g[f"prompt_{i:02d}"] = p.to(torch.int32).contiguous()
        all_toks.append(toks)
        all_ids.append(ids)
        all_lps.append(lps)
    g["tokens"] = torch.stack(all_toks).contiguous()
    g["top_ids"] = torch.stack(all_ids).contiguous()
    g["top_logprobs"] = torch.stack(all_lps).contiguous()

    # --- teacher forced ---------------------------------------------------------------------
    seqs = C.random_ids(args.seed, 2, C.TF_LENGTHS, high)
    tf = {}
    for i, s in enumerate(seqs):
        ids, lps = C.topk_sorted(C.logits_of(model, s), C.TOP_K)
        tf[f"seq_{i}"] = s.to(torch.int32).contiguous()
        tf[f"top_ids_{i}"] = ids
        tf[f"top_logprobs_{i}"] = lps

    # --- hidden states ----------------------------------------------------------------------
    hid = {"hidden": C.capture_hidden(model, prompts[C.HIDDEN_PROMPT])}

    # --- checks (not goldens) -------------------------------------------------------------
    decode = cached_decode_check(model, prompts, all_toks)
    assert decode["argmax_agrees"] and decode["max_abs_logprob_diff"] < DECODE_CHECK_MAX_ABS, decode
    decay = gdn_decay_stats(model, seqs[-1])

    files = {"greedy.safetensors": g, "teacher_forced.safetensors": tf, "hidden.safetensors": hid}
    for fname, d in files.items():
        save_file(d, os.path.join(out, fname), metadata={"format": "pt"})
        for name, t in d.items():
            assert name not in tensors, name
            tensors[name] = (fname, t)

    # --- manifest ---------------------------------------------------------------------------
    dt = {torch.int32: "i32", torch.float32: "f32"}
    file_sha = {}
    for dirpath, dirnames, filenames in os.walk(out):
        dirnames.sort()
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, out).replace(os.sep, "/")
            if rel == "manifest.json":
                continue
            file_sha[rel] = C.sha256_file(full)
    if os.path.commonpath([os.path.abspath(args.model), os.path.abspath(out)]) != os.path.abspath(out):
        print(f"note: model dir {args.model} is outside {out}; its files are not in the manifest", file=sys.stderr)

    script = os.path.abspath(__file__)
    helper = os.path.abspath(C.__file__)
    manifest = {
        "kind": "model",
        "model": MODEL,
        "case": case,
        "args": {
            "n_prompts": len(C.PROMPT_LENGTHS),
            "n_new": C.N_NEW,
            "top_k": C.TOP_K,
            "prompt_lengths": C.PROMPT_LENGTHS,
            "tf_lengths": C.TF_LENGTHS,
            "hidden_prompt": C.HIDDEN_PROMPT,
        },
        "tensors": {
            name: {"file": f, "dtype": dt[t.dtype], "shape": list(t.shape), "sha256": file_sha[f]}
            for name, (f, t) in sorted(tensors.items())
        },
        "files": dict(sorted(file_sha.items())),
        "tolerance": C.TOLERANCE,
        "checks": {
            "cached_decode": {**decode, "limit": DECODE_CHECK_MAX_ABS,
                              "what": "greedy battery replayed with a cache (recurrent delta rule + "
                                      "causal_conv1d_update per token) vs the cache-free chunked forwards"},
        },
        "oracle": {
            "name": "transformers",
            "version": transformers.__version__,
            "torch_version": torch.__version__,
            "device": "cpu",
            "dtype": "float32",
            "attn_implementation": "eager",
            "model_class": MODEL_CLASS,
            "config_model_type": CONFIG_MODEL_TYPE,
            "linear_attention_impl": impl,
            "seed": args.seed,
            "script": C.repo_relative(script),
            "script_sha256": C.sha256_file(script),
            "helper_script": C.repo_relative(helper),
            "helper_script_sha256": C.sha256_file(helper),
            "date": C.capture_date(),
        },
    }
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(manifest, f, indent=2, sort_keys=False)
        f.write("\n")

    # --- summary ----------------------------------------------------------------------------
    lp = g["top_logprobs"]
    gaps = (lp[..., 0] - lp[..., 1]).flatten()
    tfg = torch.cat([(tf[f"top_logprobs_{i}"][:, 0] - tf[f"top_logprobs_{i}"][:, 1]) for i in range(len(seqs))])
    print(f"{case}: {MODEL} ({CONFIG_MODEL_TYPE}) vocab {vocab}; wrote {', '.join(files)} and manifest.json to {out}")
    print(f"top1-top2 gap over {gaps.numel()} greedy steps: median {gaps.median().item():.4f} nats, "
          f"min {gaps.min().item():.4g}, steps under {C.TOLERANCE['near_tie_nats']}: "
          f"{int((gaps < C.TOLERANCE['near_tie_nats']).sum())}; teacher-forced median {tfg.median().item():.4f} "
          f"over {tfg.numel()} positions")
    print(f"hidden max |x| per entry: {[round(v, 3) for v in hid['hidden'].abs().amax(dim=(1, 2)).tolist()]}")
    print(f"GDN calls per forward: {cc.counts}")
    print(f"cached decode vs full forward: {decode}")
    print(f"decay exp(g) / beta quantiles (5/50/95%) over seq_3: {decay}")
    distinct = len({tuple(t.tolist()) for t in all_toks})
    print(f"distinct greedy continuations: {distinct}/{len(all_toks)}")


if __name__ == "__main__":
    main()
