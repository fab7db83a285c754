#!/usr/bin/env bash
# r57, readied for the next lease (r57's device time ran out). From the repository root with
# carry [".gl"]; .gl holds the loader .debs and g3 = main at the commit that adds this file
# (`cargo build --release --bin wgllm`, strip, `xz -9 -c ... > .gl/g3.xz`).
# 1. Where a q4_k_m step's extra time goes (r57's lead table: llama.cpp's q4_k_m file 796.2 tok/s
#    against the uniform q4_k shape's 938.2): GPU time per kernel of one decode step, uniform
#    q4_k, the q4_k_m mixture (`--quant q4_k_m`: q6_k output and 14 layers' attn_v / ffn_down,
#    those layers' v projected apart) and uniform q6_k (the q6_k matvec's own speed).
# 2. The same three decode wall figures alternated, two rounds.
# 3. Whatever GPU came, the lead rows once (an H200 last measured them in r45).
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
nvidia-smi --query-gpu=name --format=csv,noheader
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; xz -dc .gl/g3.xz > /tmp/w/g3; chmod +x /tmp/w/g3
for q in q4_k q4_k_m q6_k; do
  echo "=== profile $q $(t)"
  timeout 90 /tmp/w/g3 bench --shape qwen3-0.6b --quant $q --device wgpu:nvidia --decode 32 --prefill 16 --profile 2>&1 |
    awk '/dispatches\/step/ {print} /decode step: wall/ {d = 1} /prefill [0-9]+: wall/ {d = 0} d'
done
BINS="g3" timeout 200 tools/bench/ab.sh 2 \
  "--shape qwen3-0.6b --quant q4_k --decode 128 --prefill 16" \
  "--shape qwen3-0.6b --quant q4_k_m --decode 128 --prefill 16" \
  "--shape qwen3-0.6b --quant q6_k --decode 128 --prefill 16" 2>&1 | grep -E "^===|decode batch|rror"
echo "=== lead rows $(t)"
for a in "" "--quant q4_k"; do
  timeout 60 /tmp/w/g3 bench --shape qwen3-0.6b $a --device wgpu:nvidia --decode 128 --prefill 2048 2>&1 | grep -E "wgllm bench|decode batch|prefill 2048|rror"
done
timeout 60 /tmp/w/g3 bench --shape qwen3.5-0.8b --device wgpu:nvidia --decode 128 --prefill 16 2>&1 | grep -E "decode batch|rror"
echo "=== done $(t)"
