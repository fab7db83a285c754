#!/usr/bin/env python3
"""Write a Hugging Face Qwen3 directory as a GGUF file the way llama.cpp's converter lays it out
(GGUF tensor names, q/k rows in Hugging Face order: Qwen3's RoPE pairs dims d and d + Dh/2, which
the converter keeps), each matrix quantized to --quant except attn_v, quantized to --quant-v: a
llama.cpp q4_k_m file keeps attn_v in another type than attn_q / attn_k in some layers, and this
is that case at a tiny size (types of 32-element blocks, for a 128-wide model). Norms f32. Needs
only numpy and the `gguf` package (the safetensors file is read by hand, bf16 widened exactly).

    python tools/oracle/make_gguf_qwen3.py --model goldens/qwen3-tiny/model \\
        --quant q8_0 --quant-v q4_0 --out tests/fixtures/qwen3-tiny-q8_0-v-q4_0.gguf

tests/qwen3_gguf.rs loads it on cpu and on every wgpu adapter: a one-token step there projects
q and k in one linear and v apart into the same row. Deterministic: same inputs, same bytes.
"""

import argparse
import json
import os
import struct

import numpy as np

import gguf

TYPES = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0,
         "q4_1": gguf.GGMLQuantizationType.Q4_1}


def load(path: str) -> dict:
    """The tensors of a safetensors file as f32 arrays (bf16 and f32 only)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in head.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        raw = data[a:b]
        if t["dtype"] == "BF16":
            v = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] == "F32":
            v = np.frombuffer(raw, dtype=np.float32)
        else:
            raise SystemExit(f"{name}: dtype {t['dtype']} not handled")
        out[name] = v.reshape(t["shape"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quant", default="q8_0", choices=sorted(TYPES))
    ap.add_argument("--quant-v", default="q4_0", choices=sorted(TYPES))
    args = ap.parse_args()
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    assert cfg["model_type"] == "qwen3", cfg["model_type"]
    sd = load(os.path.join(args.model, "model.safetensors"))
    hq, hkv, dh = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]

    w = gguf.GGUFWriter(args.out, "qwen3")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(hq)
    w.add_head_count_kv(hkv)
    w.add_key_length(dh)
    w.add_value_length(dh)
    w.add_rope_freq_base(cfg["rope_parameters"]["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_eos_token_id(cfg["eos_token_id"])

    def put(name: str, a: np.ndarray, qt=None) -> None:
        a = np.ascontiguousarray(a, dtype=np.float32)
        if a.ndim == 1 or qt is None:
            w.add_tensor(name, a)
        else:
            w.add_tensor(name, gguf.quants.quantize(a, qt), raw_dtype=qt)

    q, qv = TYPES[args.quant], TYPES[args.quant_v]
    put("token_embd.weight", sd["model.embed_tokens.weight"], q)
    put("output_norm.weight", sd["model.norm.weight"])
    assert cfg.get("tie_word_embeddings", False)
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
             "self_attn.k_norm": "attn_k_norm", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(cfg["num_hidden_layers"]):
        for hf, g in names.items():
            put(f"blk.{i}.{g}.weight", sd[f"model.layers.{i}.{hf}.weight"], qv if g == "attn_v" else q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, {args.quant}, attn_v {args.quant_v})")


if __name__ == "__main__":
    main()
