#!/usr/bin/env python3
"""Write a random-weight model directory with the Qwen3-0.6B shape, for serving benchmarks.

    python3 tools/bench/shaped_model.py --out /tmp/q06                       # the full shape (1.2 GB)
    python3 tools/bench/shaped_model.py --out /tmp/q-small --layers 2 --hidden 256 --vocab 4096

`wgllm serve --model OUT` (and `run`, `batch`, `bench --model`) loads it like a Hugging Face Qwen3
directory. `wgllm bench --shape qwen3-0.6b` measures the engine with random weights already; this
exists so that the HTTP server, which loads a model directory with a tokenizer and a chat template,
can be measured at the same shape.

Needs numpy only (no torch, no safetensors, no tokenizers): the GPU machines have numpy, and a
package registry may not be reachable there. Writes:

  config.json            Qwen/Qwen3-0.6B's config (hidden 1024, 28 layers, 16 q / 8 kv heads of
                         128, intermediate 3072, vocab 151936, tied embeddings, rms_norm_eps 1e-6,
                         rope_theta 1e6, max_position_embeddings 40960), with the overrides given.
                         max_position_embeddings stays the real 40960: the server's KV plan is set
                         by --ctx (default 4096) and --kv-memory, which cap it, so a smaller value
                         here would change nothing but the refusal message for over-long prompts.
  generation_config.json eos ids as Qwen3's: <|im_end|> and <|endoftext|>.
  model.safetensors      bf16; tensor names as transformers' Qwen3ForCausalLM (model.embed_tokens,
                         model.layers.N.{self_attn,mlp}.*, *_layernorm, model.norm; lm_head only
                         when untied). Header hand-written (8-byte little-endian length, JSON, padded
                         with spaces to 8 bytes), as the safetensors format describes it.
  tokenizer.json         a WordLevel tokenizer: word "t<i>" is id i for i < vocab - 4, then "<unk>",
                         "<|endoftext|>", "<|im_start|>", "<|im_end|>" (the last three ids, also
                         listed as special added tokens); WhitespaceSplit pre-tokenizer; a WordPiece
                         decoder without cleanup, which joins the words with single spaces (and
                         keeps a prefix's decode a prefix of the whole, as streaming needs).
                         Prompts made of "t<i>" words are one token a word: the load client's
                         `--words tN` (N = vocab - 4 at most).
  tokenizer_config.json  Qwen3's chat template (tests/fixtures/chat_templates/Qwen-Qwen3-0.6B.jinja),
                         eos <|im_end|>, pad <|endoftext|>, no BOS (as Qwen3).

Weights: N(0, 1) * 0.02 for every matrix, 1.0 for every norm weight, rounded to bf16 (nearest,
ties to even). Each tensor has its own numpy Generator seeded from (seed, crc32(name)), so a
tensor's values depend only on the seed, its name and its shape. Random weights give near-uniform
logits: the text is gibberish and a request rarely meets EOS, so requests run to max_tokens.
"""

import argparse
import json
import os
import sys
import zlib

try:
    import numpy as np
except ImportError:
    sys.exit("shaped_model.py needs numpy (python3 -m pip install numpy)")

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "..", "..", "tests", "fixtures", "chat_templates", "Qwen-Qwen3-0.6B.jinja")

STD = 0.02
# elements drawn and converted at a time: bounds the memory of the 151936 x 1024 embedding
CHUNK = 1 << 24


def qwen3_06b_config(a) -> dict:
    """Qwen/Qwen3-0.6B's config.json, with the shape overrides of `a`."""
    v = a.vocab
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": v - 3,
        "eos_token_id": v - 1,
        "head_dim": a.head_dim,
        "hidden_act": "silu",
        "hidden_size": a.hidden,
        "initializer_range": 0.02,
        "intermediate_size": a.intermediate,
        "max_position_embeddings": a.max_pos,
        "max_window_layers": a.layers,
        "model_type": "qwen3",
        "num_attention_heads": a.heads,
        "num_hidden_layers": a.layers,
        "num_key_value_heads": a.kv_heads,
        "rms_norm_eps": 1e-6,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": None,
        "tie_word_embeddings": not a.untied,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": v,
    }


def tensors(a):
    """(name, shape, kind) of every parameter, in the order written; kind 'norm' or 'matrix'."""
    h, hd, q, kv, inter = a.hidden, a.head_dim, a.heads * a.head_dim, a.kv_heads * a.head_dim, a.intermediate
    out = [("model.embed_tokens.weight", (a.vocab, h), "matrix")]
    for i in range(a.layers):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", (h,), "norm"),
            (p + "self_attn.q_proj.weight", (q, h), "matrix"),
            (p + "self_attn.k_proj.weight", (kv, h), "matrix"),
            (p + "self_attn.v_proj.weight", (kv, h), "matrix"),
            (p + "self_attn.o_proj.weight", (h, q), "matrix"),
            (p + "self_attn.q_norm.weight", (hd,), "norm"),
            (p + "self_attn.k_norm.weight", (hd,), "norm"),
            (p + "post_attention_layernorm.weight", (h,), "norm"),
            (p + "mlp.gate_proj.weight", (inter, h), "matrix"),
            (p + "mlp.up_proj.weight", (inter, h), "matrix"),
            (p + "mlp.down_proj.weight", (h, inter), "matrix"),
        ]
    out.append(("model.norm.weight", (h,), "norm"))
    if a.untied:
        out.append(("lm_head.weight", (a.vocab, h), "matrix"))
    return out


def to_bf16(x: "np.ndarray") -> bytes:
    """f32 -> bf16 bits, round to nearest even (NaN cannot occur: finite normal draws)."""
    u = x.astype(np.float32).view(np.uint32)
    u = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return u.astype("<u2").tobytes()


def write_safetensors(path: str, a) -> int:
    specs = tensors(a)
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in specs:
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(len(hj).to_bytes(8, "little"))
        f.write(hj)
        for name, shape, kind in specs:
            n = int(np.prod(shape))
            if kind == "norm":
                f.write(to_bf16(np.ones(n, np.float32)))
                continue
            g = np.random.default_rng((a.seed * 1_000_003 + zlib.crc32(name.encode())) & 0xFFFFFFFF)
            for s in range(0, n, CHUNK):
                m = min(CHUNK, n - s)
                f.write(to_bf16(g.standard_normal(m, dtype=np.float32) * np.float32(STD)))
    return off


SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def tokenizer_json(v: int) -> dict:
    words = v - 4
    vocab = {f"t{i}": i for i in range(words)}
    vocab["<unk>"] = words
    added = []
    for k, s in enumerate(SPECIALS):
        vocab[s] = words + 1 + k
        added.append({"id": words + 1 + k, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True})
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": False},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    }


def tokenizer_config(v: int, max_pos: int) -> dict:
    with open(TEMPLATE, encoding="utf-8") as f:
        template = f.read()
    first = v - 3
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": {
            str(first + k): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                             "single_word": False, "special": True}
            for k, s in enumerate(SPECIALS)
        },
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "chat_template": template,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": max_pos,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "<unk>",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory to write (created; files in it replaced)")
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--intermediate", type=int, default=None, help="default: 3 x hidden (3072)")
    ap.add_argument("--heads", type=int, default=None, help="q heads; default: hidden / 64 (16)")
    ap.add_argument("--kv-heads", type=int, default=None, help="default: heads / 2 (8)")
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--max-pos", type=int, default=40960, help="max_position_embeddings")
    ap.add_argument("--untied", action="store_true", help="a separate lm_head (Qwen3-0.6B ties it)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    a.intermediate = a.intermediate or 3 * a.hidden
    a.heads = a.heads or max(1, a.hidden // 64)
    a.kv_heads = a.kv_heads or max(1, a.heads // 2)
    for flag, val, low in [("--layers", a.layers, 1), ("--hidden", a.hidden, 1), ("--intermediate", a.intermediate, 1),
                           ("--heads", a.heads, 1), ("--kv-heads", a.kv_heads, 1), ("--head-dim", a.head_dim, 2),
                           ("--vocab", a.vocab, 5), ("--max-pos", a.max_pos, 2)]:
        if val < low:
            ap.error(f"{flag}: {val} is below {low}")
    if a.heads % a.kv_heads:
        ap.error(f"--heads {a.heads} is not a multiple of --kv-heads {a.kv_heads}")
    if a.head_dim % 2:
        ap.error(f"--head-dim {a.head_dim} must be even (RoPE rotates pairs)")
    os.makedirs(a.out, exist_ok=True)

    def dump(name, obj):
        with open(os.path.join(a.out, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2 if name != "tokenizer.json" else None, ensure_ascii=False)
            f.write("\n")

    dump("config.json", qwen3_06b_config(a))
    dump("generation_config.json", {"bos_token_id": a.vocab - 3, "eos_token_id": [a.vocab - 1, a.vocab - 3]})
    dump("tokenizer.json", tokenizer_json(a.vocab))
    dump("tokenizer_config.json", tokenizer_config(a.vocab, a.max_pos))
    n = write_safetensors(os.path.join(a.out, "model.safetensors"), a)
    print(f"{a.out}: {a.layers} layers, hidden {a.hidden}, {a.heads}/{a.kv_heads} heads of {a.head_dim}, "
          f"intermediate {a.intermediate}, vocab {a.vocab} ({'untied' if a.untied else 'tied'}); "
          f"{n / 2:.0f} bf16 parameters ({n / 2**20:.0f} MiB); prompt words t0..t{a.vocab - 5} "
          f"(serve_load.py --words t{a.vocab - 4})")


if __name__ == "__main__":
    main()
