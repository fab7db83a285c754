#!/usr/bin/env python3
"""Build a tiny random-weight model in a transformers architecture, for the oracle goldens.

    python tools/oracle/make_tiny.py --arch qwen3 --seed 0 --out goldens/qwen3-tiny/model

Writes OUT/{config.json, generation_config.json, model.safetensors, tokenizer.json,
tokenizer_config.json}. The tokenizer is the one from make_tokenizer.py (trained, deterministic).

Weights: every tensor is drawn from its own torch.Generator seeded with
    (seed * 1_000_003 + zlib.crc32(name)) & 0xFFFFFFFF
so a tensor's values depend only on (seed, name, shape), never on init order:
    embeddings      N(0, EMBED_STD)
    linear weights  N(0, 1) / sqrt(fan_in)
    norm weights    1 + 0.1 * N(0, 1)
    biases          0.1 * N(0, 1)          (none in qwen3)
All values are rounded to bf16 and stored as bf16, so computing in f32 from the file is exact.
lm_head.weight is omitted (tie_word_embeddings = true).

To add an architecture: write a config builder `def _cfg_<arch>(vocab_size, eos_id) -> PreTrainedConfig`,
add it to ARCHS, and make sure `init_tensor` knows every parameter kind it has.
"""

import argparse
import json
import math
import os
import sys
import zlib

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tokenizer  # noqa: E402

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

# 0.2, not 0.1: with std 0.1 (tied lm_head) the logits are flat -- median top1-top2 gap 0.35 nats
# over the greedy steps, 158/256 steps inside the 0.5-nat near-tie band, teacher-forced median
# gap 0.25. With 0.2: greedy median 1.36 nats (55/256 near ties), teacher-forced median 0.55.
EMBED_STD = 0.2
NORM_STD = 0.1
BIAS_STD = 0.1


def _cfg_qwen3(vocab_size: int, eos_id: int):
    from transformers import Qwen3Config

    return Qwen3Config(
        architectures=["Qwen3ForCausalLM"],
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        hidden_act="silu",
        max_position_embeddings=512,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        attention_bias=False,
        attention_dropout=0.0,
        use_sliding_window=False,
        tie_word_embeddings=True,
        use_cache=True,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=None,
        dtype="bfloat16",
    )


# arch -> (config builder, model class name in transformers)
ARCHS = {
    "qwen3": (_cfg_qwen3, "Qwen3ForCausalLM"),
}


def tensor_seed(seed: int, name: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(name.encode("utf-8"))) & 0xFFFFFFFF


def init_tensor(name: str, shape: tuple, seed: int) -> torch.Tensor:
    g = torch.Generator(device="cpu")
    g.manual_seed(tensor_seed(seed, name))
    x = torch.randn(shape, generator=g, dtype=torch.float32)
    if name.endswith("embed_tokens.weight") or name.endswith("wte.weight"):
        w = x * EMBED_STD
    elif name.endswith("norm.weight") or "layernorm" in name or "_norm" in name:
        if len(shape) != 1:
            raise ValueError(f"{name}: norm weight with shape {shape}")
        w = 1.0 + NORM_STD * x
    elif name.endswith(".bias"):
        w = BIAS_STD * x
    elif name.endswith(".weight") and len(shape) == 2:
        w = x * (1.0 / math.sqrt(shape[1]))
    else:
        raise ValueError(f"don't know how to initialise {name} {shape}")
    return w.to(torch.bfloat16).contiguous()


def param_shapes(config, model_cls_name: str) -> dict:
    """name -> shape of every parameter/buffer saved by transformers for this config."""
    import transformers

    cls = getattr(transformers, model_cls_name)
    with torch.device("meta"):
        model = cls(config)
    sd = model.state_dict()
    shapes = {}
    for name, t in sd.items():
        if name == "lm_head.weight" and config.tie_word_embeddings:
            continue
        shapes[name] = tuple(t.shape)
    return shapes


def write_json(path: str, obj) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")


def build(arch: str, seed: int, out: str) -> None:
    if arch not in ARCHS:
        raise SystemExit(f"unknown arch {arch!r}; known: {sorted(ARCHS)}")
    os.makedirs(out, exist_ok=True)
    tok = make_tokenizer.write_tokenizer(out)
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    eos_id = tok.token_to_id(make_tokenizer.EOS_TOKEN)

    builder, cls_name = ARCHS[arch]
    config = builder(vocab_size, eos_id)

    shapes = param_shapes(config, cls_name)
    tensors = {name: init_tensor(name, shape, seed) for name, shape in sorted(shapes.items())}
    save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})

    # config.json: exactly what config.save_pretrained() writes (the diff against the library
    # defaults, which keeps every architecture field), with bos_token_id forced to an explicit null.
    cfg = json.loads(config.to_json_string(use_diff=True))
    cfg["bos_token_id"] = None
    write_json(os.path.join(out, "config.json"), cfg)
    write_json(os.path.join(out, "generation_config.json"), {"bos_token_id": None, "eos_token_id": eos_id})

    n_params = sum(t.numel() for t in tensors.values())
    print(f"{arch}: {len(tensors)} tensors, {n_params} params, vocab {vocab_size}, eos {eos_id} -> {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", required=True, choices=sorted(ARCHS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    build(args.arch, args.seed, args.out)


if __name__ == "__main__":
    main()
