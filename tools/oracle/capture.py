#!/usr/bin/env python3
"""Capture oracle goldens from a transformers model (float32, CPU, eager attention).

    python tools/oracle/capture.py --model goldens/qwen3-tiny/model --out goldens/qwen3-tiny

Writes into OUT:
  greedy.safetensors          prompt_00..prompt_15 (i32 [L]), tokens (i32 [P, N]),
                              top_ids (i32 [P, N, K]), top_logprobs (f32 [P, N, K])
  teacher_forced.safetensors  seq_0..seq_3 (i32 [L]), top_ids_i (i32 [L, K]), top_logprobs_i (f32 [L, K])
  hidden.safetensors          hidden (f32 [n_layers + 1, L, hidden]) for prompt HIDDEN_PROMPT
  manifest.json               tensors, sha256 of every file under OUT, tolerances, oracle versions

Greedy decoding is a manual loop of full-sequence forwards (no KV cache, no EOS stop). Top-k is
over log_softmax of the f32 logits, sorted by descending logprob, ties broken by the lower id.
Prompt/sequence ids are seeded random ids in [0, vocab - 3): the last 3 ids are the special tokens.

Everything is deterministic (one thread, deterministic algorithms). The manifest's date is today
(UTC) unless SOURCE_DATE_EPOCH is set.
"""

import argparse
import datetime
import hashlib
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file

torch.set_num_threads(1)
torch.set_num_interop_threads(1)
torch.use_deterministic_algorithms(True)

import transformers  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

PROMPT_LENGTHS = [1, 2, 3, 5, 7, 8, 13, 16, 21, 31, 32, 33, 47, 64, 100, 150]
N_NEW = 16
TOP_K = 20
TF_LENGTHS = [7, 64, 65, 150]
HIDDEN_PROMPT = 9
N_SPECIAL = 3
TOLERANCE = {"near_tie_nats": 0.5, "hidden_max_abs": 1e-3, "tf_logprob_max_abs": 1e-3}


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def random_ids(seed: int, stream: int, lengths: list, high: int) -> list:
    """One seeded id sequence per length, ids uniform in [0, high)."""
    rng = np.random.Generator(np.random.PCG64([seed, stream]))
    return [torch.from_numpy(rng.integers(0, high, size=n, dtype=np.int64)) for n in lengths]


def topk_sorted(logits: torch.Tensor, k: int):
    """logits [..., V] f32 -> (ids i32 [..., k], logprobs f32 [..., k]); descending, ties by lower id."""
    lp = torch.log_softmax(logits.float(), dim=-1)
    vals, idx = torch.sort(lp, dim=-1, descending=True, stable=True)
    return idx[..., :k].to(torch.int32).contiguous(), vals[..., :k].contiguous()


@torch.no_grad()
def logits_of(model, ids: torch.Tensor) -> torch.Tensor:
    out = model(input_ids=ids.view(1, -1), use_cache=False)
    return out.logits[0].float()


@torch.no_grad()
def greedy(model, prompt: torch.Tensor, n_new: int, k: int):
    seq = prompt.clone()
    toks, tids, tlps = [], [], []
    for _ in range(n_new):
        ids, lps = topk_sorted(logits_of(model, seq)[-1], k)
        nxt = ids[0].to(torch.int64)
        toks.append(nxt)
        tids.append(ids)
        tlps.append(lps)
        seq = torch.cat([seq, nxt.view(1)])
    return torch.stack(toks).to(torch.int32), torch.stack(tids), torch.stack(tlps)


@torch.no_grad()
def capture_hidden(model, ids: torch.Tensor) -> torch.Tensor:
    """[n_layers + 1, L, hidden]: embedding output, then each decoder layer's output (pre final norm)."""
    inner = model.model
    captured = []

    def hook(_module, _inputs, output):
        h = output[0] if isinstance(output, (tuple, list)) else output
        captured.append(h[0].detach().float().clone())

    handles = [inner.embed_tokens.register_forward_hook(hook)]
    handles += [layer.register_forward_hook(hook) for layer in inner.layers]
    try:
        logits_of(model, ids)
    finally:
        for h in handles:
            h.remove()
    n_layers = len(inner.layers)
    assert len(captured) == n_layers + 1, len(captured)
    return torch.stack(captured).contiguous()


def capture_date() -> str:
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    if sde:
        t = datetime.datetime.fromtimestamp(int(sde), tz=datetime.timezone.utc)
    else:
        t = datetime.datetime.now(tz=datetime.timezone.utc)
    return t.date().isoformat()


def repo_relative(path: str) -> str:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


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

    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    cfg = model.config
    vocab = cfg.vocab_size
    arch = cfg.model_type
    high = vocab - N_SPECIAL

    # The weights are bf16 on disk; make sure they were upcast exactly and lm_head is tied.
    for name, p in model.named_parameters():
        assert p.dtype == torch.float32, (name, p.dtype)
        assert torch.equal(p, p.to(torch.bfloat16).float()), f"{name} is not bf16-exact"
    if cfg.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "lm_head not tied"

    tensors = {}  # name -> (file, tensor)

    # --- greedy -----------------------------------------------------------------------------
    prompts = random_ids(args.seed, 1, PROMPT_LENGTHS, high)
    g = {}
    all_toks, all_ids, all_lps = [], [], []
    for i, p in enumerate(prompts):
        toks, ids, lps = greedy(model, p, N_NEW, TOP_K)
        g[f"prompt_{i:02d}"] = p.to(torch.int32).contiguous()
        all_toks.append(toks)
        all_ids.append(ids)
        all_lps.append(lps)
    g["tokens"] = torch.stack(all_toks).contiguous()
    g["top_ids"] = torch.stack(all_ids).contiguous()
    g["top_logprobs"] = torch.stack(all_lps).contiguous()

    # --- teacher forced ---------------------------------------------------------------------
    seqs = random_ids(args.seed, 2, TF_LENGTHS, high)
    tf = {}
    for i, s in enumerate(seqs):
        ids, lps = topk_sorted(logits_of(model, s), TOP_K)
        tf[f"seq_{i}"] = s.to(torch.int32).contiguous()
        tf[f"top_ids_{i}"] = ids
        tf[f"top_logprobs_{i}"] = lps

    # --- hidden states ----------------------------------------------------------------------
    hid = {"hidden": capture_hidden(model, prompts[HIDDEN_PROMPT])}

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
            file_sha[rel] = sha256_file(full)
    model_abs = os.path.abspath(args.model)
    if os.path.commonpath([model_abs, os.path.abspath(out)]) != os.path.abspath(out):
        print(f"note: model dir {args.model} is outside {out}; its files are not in the manifest", file=sys.stderr)

    script = os.path.abspath(__file__)
    manifest = {
        "kind": "model",
        "model": arch,
        "case": case,
        "args": {
            "n_prompts": len(PROMPT_LENGTHS),
            "n_new": N_NEW,
            "top_k": TOP_K,
            "prompt_lengths": PROMPT_LENGTHS,
            "tf_lengths": TF_LENGTHS,
            "hidden_prompt": HIDDEN_PROMPT,
        },
        "tensors": {
            name: {"file": f, "dtype": dt[t.dtype], "shape": list(t.shape), "sha256": file_sha[f]}
            for name, (f, t) in sorted(tensors.items())
        },
        "files": dict(sorted(file_sha.items())),
        "tolerance": TOLERANCE,
        "oracle": {
            "name": "transformers",
            "version": transformers.__version__,
            "torch_version": torch.__version__,
            "device": "cpu",
            "dtype": "float32",
            "attn_implementation": "eager",
            "seed": args.seed,
            "script": repo_relative(script),
            "script_sha256": sha256_file(script),
            "date": capture_date(),
        },
    }
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(manifest, f, indent=2, sort_keys=False)
        f.write("\n")

    # --- summary ----------------------------------------------------------------------------
    lp = g["top_logprobs"]
    gaps = (lp[..., 0] - lp[..., 1]).flatten()
    print(f"{case}: {arch} vocab {vocab}; wrote {', '.join(files)} and manifest.json to {out}")
    print(f"top1-top2 gap over {gaps.numel()} greedy steps: median {gaps.median().item():.4f} nats, "
          f"min {gaps.min().item():.4g}, steps under {TOLERANCE['near_tie_nats']}: "
          f"{int((gaps < TOLERANCE['near_tie_nats']).sum())}")
    try:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
        p0 = g["prompt_00"].tolist()
        t0 = g["tokens"][0].tolist()
        print(f"prompt_00 {p0} {tok.decode(p0, skip_special_tokens=False)!r} -> {t0} "
              f"{tok.decode(t0, skip_special_tokens=False)!r}")
    except Exception as e:  # the sanity print is best-effort
        print(f"(no tokenizer decode: {e})")


if __name__ == "__main__":
    main()
