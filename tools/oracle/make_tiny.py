#!/usr/bin/env python3
"""Build a tiny random-weight model in a transformers architecture, for the oracle goldens.

    python tools/oracle/make_tiny.py --arch qwen3   --seed 0 --out goldens/qwen3-tiny/model
    python tools/oracle/make_tiny.py --arch qwen3_5 --seed 0 --out goldens/qwen3_5-tiny/model
    python tools/oracle/make_tiny.py --arch llama   --seed 0 --out goldens/llama-tiny/model

Writes OUT/{config.json, generation_config.json, model.safetensors, tokenizer.json,
tokenizer_config.json}. The tokenizer is the one from make_tokenizer.py (trained, deterministic).

Weights: every tensor is drawn from its own torch.Generator seeded with
    (seed * 1_000_003 + zlib.crc32(name)) & 0xFFFFFFFF
so a tensor's values depend only on (seed, name, shape), never on init order:
    embeddings      N(0, embed std): 0.2 for qwen3, 0.25 for qwen3_5 (EMBED_STD*, see there)
    linear weights  N(0, 1) / sqrt(fan_in)
    norm weights    1 + 0.1 * N(0, 1)      (norms that multiply by the weight itself)
    biases          0.1 * N(0, 1)          (none in qwen3 / qwen3_5)
qwen3_5 (Gated DeltaNet hybrid) adds, by parameter kind:
    zero-centred norm weights  0.1 * N(0, 1)   every Qwen3_5RMSNorm (input_layernorm,
                               post_attention_layernorm, model.norm, self_attn.q_norm/k_norm):
                               they compute x_hat * (1 + w), so 1 + w ~ 1 + 0.1 * N(0, 1)
    linear_attn.norm.weight    1 + 0.1 * N(0, 1)   (Qwen3_5RMSNormGated multiplies by w itself)
    linear_attn.conv1d.weight  N(0, 1) / sqrt(kernel)           shape [conv_dim, 1, kernel]
    linear_attn.A_log          log(1 + 15 * U[0, 1))            A = exp(A_log) in [1, 16)
    linear_attn.dt_bias        log(expm1(dt)), dt = exp(U[log DT_MIN, log DT_MAX))  (so
                               softplus(dt_bias) = dt, log-uniform: the Mamba/FLA dt init)
All values are rounded to bf16 and stored as bf16, so computing in f32 from the file is exact.
lm_head.weight is omitted (tie_word_embeddings = true).

To add an architecture: write a config builder `def _cfg_<arch>(vocab_size, eos_id) -> PreTrainedConfig`,
add it to ARCHS, and make sure `init_tensor` knows every parameter kind it has (arch-specific
kinds go through `_init_<arch>`, which returns None for the kinds the shared rules handle).
"""

import argparse
import json
import math
import os
import sys
import zlib

import torch
from safetensors.torch import save_file

sys.dont_write_bytecode = True  # no tools/oracle/__pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tokenizer  # noqa: E402

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

# 0.2, not 0.1: with std 0.1 (tied lm_head) the logits are flat -- median top1-top2 gap 0.35 nats
# over the greedy steps, 158/256 steps inside the 0.5-nat near-tie band, teacher-forced median
# gap 0.25. With 0.2: greedy median 1.36 nats (55/256 near ties), teacher-forced median 0.55.
EMBED_STD = 0.2
# qwen3_5-tiny: with 0.2 the greedy median top1-top2 gap is 0.48 nats (129/256 steps under 0.5,
# teacher-forced median 0.48); 0.25 gives 0.78 (91/256, teacher-forced 0.62) and 0.3 gives 0.97
# (71/256) but greedy runs that repeat the previous token on 98/240 steps (58 with 0.25, 30 with 0.2).
EMBED_STD_QWEN3_5 = 0.25
NORM_STD = 0.1
BIAS_STD = 0.1
# qwen3_5 linear attention: per-head dt = softplus(dt_bias) log-uniform in [DT_MIN, DT_MAX), A in [1, 16).
# With a = in_proj_a(x) ~ N(0, 1) on top, the per-token decay exp(g) = exp(-A * softplus(a + dt_bias))
# over qwen3_5-tiny's 150-token teacher-forced sequence has 5/50/95% quantiles 0.18 / 0.84 / 0.98:
# some heads forget within a few tokens, some carry state across the 64-token chunk boundary (the
# case the chunked delta rule can get wrong). beta = sigmoid(in_proj_b(x)): 0.16 / 0.51 / 0.83.
A_MIN, A_MAX = 1.0, 16.0
DT_MIN, DT_MAX = 0.01, 0.1


def _common(vocab_size: int, eos_id: int) -> dict:
    """The config fields every tiny model shares: widths, heads, tokens, dtype."""
    return dict(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        hidden_act="silu",
        max_position_embeddings=512,
        attention_bias=False,
        use_cache=True,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=None,
        dtype="bfloat16",
    )


def _cfg_qwen3(vocab_size: int, eos_id: int):
    from transformers import Qwen3Config

    return Qwen3Config(
        **_common(vocab_size, eos_id),
        architectures=["Qwen3ForCausalLM"],
        num_hidden_layers=3,
        head_dim=64,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        attention_dropout=0.0,
        use_sliding_window=False,
        tie_word_embeddings=True,
    )


def _cfg_llama(vocab_size: int, eos_id: int):
    """Tiny Llama 3.x: no q/k norms, untied LM head, and the llama3 RoPE scaling with an original
    context of 64 so that the low-frequency dims of the 150-token sequences are rescaled."""
    from transformers import LlamaConfig

    return LlamaConfig(
        **_common(vocab_size, eos_id),
        architectures=["LlamaForCausalLM"],
        num_hidden_layers=3,
        head_dim=32,
        rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
        mlp_bias=False,
        tie_word_embeddings=False,
    )


def _cfg_qwen3_5(vocab_size: int, eos_id: int):
    """Tiny Qwen3.5 text model (transformers `qwen3_5_text`, Qwen3_5ForCausalLM), real-shaped:
    3 of 4 layers Gated DeltaNet (linear attention), the 4th full attention with an output gate,
    partial RoPE (25% of head_dim = 16 dims), GQA in both kinds of layer (4 q / 2 kv heads;
    2 key / 4 value heads in the linear layers), rope_theta as the published Qwen3.5 configs."""
    from transformers import Qwen3_5TextConfig

    return Qwen3_5TextConfig(
        **_common(vocab_size, eos_id),
        architectures=["Qwen3_5ForCausalLM"],
        num_hidden_layers=4,
        layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        head_dim=64,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=32,
        linear_value_head_dim=32,
        linear_conv_kernel_dim=4,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25},
        attention_dropout=0.0,
        tie_word_embeddings=True,
    )


def _init_qwen3_5(name: str, shape: tuple, g: torch.Generator):
    """qwen3_5-specific parameter kinds (see the module doc); None: use the shared rules."""
    if name.endswith("linear_attn.A_log"):
        u = torch.rand(shape, generator=g, dtype=torch.float32)
        return torch.log(A_MIN + (A_MAX - A_MIN) * u)
    if name.endswith("linear_attn.dt_bias"):
        u = torch.rand(shape, generator=g, dtype=torch.float32)
        dt = torch.exp(math.log(DT_MIN) + (math.log(DT_MAX) - math.log(DT_MIN)) * u)
        return torch.log(torch.expm1(dt))  # inverse softplus
    if name.endswith("linear_attn.conv1d.weight"):
        if len(shape) != 3 or shape[1] != 1:
            raise ValueError(f"{name}: depthwise conv weight with shape {shape}")
        return torch.randn(shape, generator=g, dtype=torch.float32) * (1.0 / math.sqrt(shape[2]))
    if name.endswith("linear_attn.norm.weight"):  # Qwen3_5RMSNormGated: rmsnorm(x) * w * silu(z)
        return 1.0 + NORM_STD * torch.randn(shape, generator=g, dtype=torch.float32)
    if name.endswith("norm.weight") or "layernorm" in name:  # Qwen3_5RMSNorm: x_hat * (1 + w)
        if len(shape) != 1:
            raise ValueError(f"{name}: norm weight with shape {shape}")
        return NORM_STD * torch.randn(shape, generator=g, dtype=torch.float32)
    return None


# arch -> (config builder, model class name in transformers, arch-specific init or None, embedding std)
ARCHS = {
    "qwen3": (_cfg_qwen3, "Qwen3ForCausalLM", None, EMBED_STD),
    "qwen3_5": (_cfg_qwen3_5, "Qwen3_5ForCausalLM", _init_qwen3_5, EMBED_STD_QWEN3_5),
    "llama": (_cfg_llama, "LlamaForCausalLM", None, EMBED_STD),
}


def tensor_seed(seed: int, name: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(name.encode("utf-8"))) & 0xFFFFFFFF


def init_tensor(name: str, shape: tuple, seed: int, arch_init=None, embed_std: float = EMBED_STD) -> torch.Tensor:
    g = torch.Generator(device="cpu")
    g.manual_seed(tensor_seed(seed, name))
    if arch_init is not None:
        w = arch_init(name, shape, g)
        if w is not None:
            return w.to(torch.bfloat16).contiguous()
    x = torch.randn(shape, generator=g, dtype=torch.float32)
    if name.endswith("embed_tokens.weight") or name.endswith("wte.weight"):
        w = x * embed_std
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

    builder, cls_name, arch_init, embed_std = ARCHS[arch]
    config = builder(vocab_size, eos_id)

    shapes = param_shapes(config, cls_name)
    tensors = {name: init_tensor(name, shape, seed, arch_init, embed_std) for name, shape in sorted(shapes.items())}
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
