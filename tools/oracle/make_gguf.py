#!/usr/bin/env python3
"""Write a Hugging Face Llama directory as a GGUF file the way llama.cpp's converter lays it out,
with the `gguf` package: GGUF tensor names, q/k rows interleaved per head (llama.cpp's RoPE
pairs adjacent dims), the llama3 RoPE scaling as `rope_freqs.weight` (one factor per frequency),
bf16 matrices kept bf16 (or quantized with --quant q8_0 / q4_0 / q4_1), norms f32.

    python tools/oracle/make_gguf.py --model goldens/llama-tiny/model --out tests/fixtures/llama-tiny-bf16.gguf

tests/llama_gguf.rs loads it beside the safetensors directory and expects the same model: it is
the test of the GGUF Llama path (name mapping, the q/k interleave undone, rope_freqs) against a
model whose oracle goldens exist. Deterministic: same inputs, same bytes.
"""

import argparse
import json
import math
import os

import numpy as np
import torch
from safetensors.torch import load_file

import gguf


def permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter order: per head, rows (half, 2) interleaved."""
    rows = w.shape[0]
    return w.reshape(heads, 2, rows // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def rope_factors(rp: dict, head_dim: int) -> np.ndarray:
    base = rp["rope_theta"]
    factor, lo, hi = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
    old = rp["original_max_position_embeddings"]
    out = []
    for i in range(0, head_dim, 2):
        freq = 1.0 / (base ** (i / head_dim))
        wavelen = 2 * math.pi / freq
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quant", default="bf16", choices=["bf16", "q8_0", "q4_0", "q4_1"])
    args = ap.parse_args()
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    assert cfg["model_type"] == "llama", cfg["model_type"]
    sd = load_file(os.path.join(args.model, "model.safetensors"))
    hq, hkv, dh = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(hq)
    w.add_head_count_kv(hkv)
    w.add_key_length(dh)
    w.add_value_length(dh)
    w.add_rope_dimension_count(dh)
    rp = cfg["rope_parameters"]
    w.add_rope_freq_base(rp["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_eos_token_id(cfg["eos_token_id"])

    qt = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0,
          "q4_1": gguf.GGMLQuantizationType.Q4_1}.get(args.quant)

    def put(name: str, t: torch.Tensor, heads: int = 0) -> None:
        if t.dim() == 1:
            w.add_tensor(name, t.float().numpy())
            return
        a = t.float().numpy()
        if heads:
            a = permute(a, heads)
        if qt is None:
            bits = torch.from_numpy(np.ascontiguousarray(a)).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
            w.add_tensor(name, bits, raw_shape=a.shape, raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(name, gguf.quants.quantize(np.ascontiguousarray(a), qt), raw_dtype=qt)

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    if not cfg.get("tie_word_embeddings", False):
        put("output.weight", sd["lm_head.weight"])
    if rp.get("rope_type") == "llama3":
        w.add_tensor("rope_freqs.weight", rope_factors(rp, dh))
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(cfg["num_hidden_layers"]):
        for hf, g in names.items():
            heads = hq if g == "attn_q" else hkv if g == "attn_k" else 0
            put(f"blk.{i}.{g}.weight", sd[f"model.layers.{i}.{hf}.weight"], heads)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, {args.quant})")


if __name__ == "__main__":
    main()
