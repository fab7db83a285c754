"""Peer measurement for `wgllm bench --shape qwen3-0.6b`: HF transformers decoding the same shape
(random weights, bf16) on the same GPU in the same run. Prints one JSON line.

    python3 tools/bench/hf_decode.py [--attn eager|sdpa] [--steps 128]
"""
import argparse, json, time
import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

ap = argparse.ArgumentParser()
ap.add_argument("--attn", default="eager")
ap.add_argument("--steps", type=int, default=128)
a = ap.parse_args()
cfg = Qwen3Config(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                  num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=40960,
                  rms_norm_eps=1e-6, tie_word_embeddings=True, rope_theta=1e6)
cfg._attn_implementation = a.attn
torch.manual_seed(0)
m = Qwen3ForCausalLM(cfg).to(torch.bfloat16).cuda().eval()
ids = torch.randint(0, 151936, (1, 16), device="cuda")
with torch.no_grad():
    m.generate(ids, max_new_tokens=8, do_sample=False, min_new_tokens=8)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = m.generate(ids, max_new_tokens=a.steps, do_sample=False, min_new_tokens=a.steps)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
# read bandwidth by torch, for the roofline cross-check
x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
torch.cuda.synchronize(); t0 = time.perf_counter()
for _ in range(20):
    x.sum()
torch.cuda.synchronize(); bw = 20 * x.numel() * 4 / (time.perf_counter() - t0)
print(json.dumps({"peer": f"transformers {a.attn}", "decode_tokens_per_s": (out.shape[1] - 16) / dt, "torch_read_bandwidth_gbs": bw / 1e9}))
