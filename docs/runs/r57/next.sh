#!/usr/bin/env bash
# r57, readied for the next lease (r57's device time ran out). From the repository root with
# carry [".gl"]; .gl holds the loader .debs and two binaries built here (`cargo build --release
# --bin wgllm`, strip, `xz -9 -c ... > .gl/NAME.xz`): g3 = main at 404d4ba (the code of this
# file's commit), gQ = branch exp/r57-q6k-v4 at 3e71851 (q6_k in 8-block device groups and its
# vec4 lanes, q6_k_v4.wgsl).
# 1. Where a q4_k_m step's extra time goes (r57's lead table: llama.cpp's q4_k_m file 796.2 tok/s
#    against the uniform q4_k shape's 938.2): GPU time per kernel of one decode step, uniform
#    q4_k, the q4_k_m mixture (`--quant q4_k_m`: q6_k output and 14 layers' attn_v / ffn_down,
#    those layers' v projected apart) and uniform q6_k (the q6_k matvec's own speed).
# 2. The same three decode wall figures, g3 against gQ alternated, two rounds; gQ's q6_k parity.
# 3. Whatever GPU came, the lead rows once (an H200 last measured them in r45).
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
nvidia-smi --query-gpu=name --format=csv,noheader
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; for b in g3 gQ; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
for q in q4_k q4_k_m q6_k; do
  echo "=== profile $q $(t)"
  timeout 90 /tmp/w/g3 bench --shape qwen3-0.6b --quant $q --device wgpu:nvidia --decode 32 --prefill 16 --profile 2>&1 |
    awk '/dispatches\/step/ {print} /decode step: wall/ {d = 1} /prefill [0-9]+: wall/ {d = 0} d'
done
BINS="g3 gQ" timeout 260 tools/bench/ab.sh 2 \
  "--shape qwen3-0.6b --quant q4_k --decode 128 --prefill 16" \
  "--shape qwen3-0.6b --quant q4_k_m --decode 128 --prefill 16" \
  "--shape qwen3-0.6b --quant q6_k --decode 128 --prefill 16" 2>&1 | grep -E "^===|decode batch|rror"
echo "=== gQ parity q6_k $(t)"
timeout 90 /tmp/w/gQ parity --device wgpu:nvidia --filter q6_k 2>&1 | grep -E "FAIL|passed" | head -8
echo "=== lead rows $(t)"
for a in "" "--quant q4_k"; do
  timeout 60 /tmp/w/g3 bench --shape qwen3-0.6b $a --device wgpu:nvidia --decode 128 --prefill 2048 2>&1 | grep -E "wgllm bench|decode batch|prefill 2048|rror"
done
timeout 60 /tmp/w/g3 bench --shape qwen3.5-0.8b --device wgpu:nvidia --decode 128 --prefill 16 2>&1 | grep -E "decode batch|rror"
echo "=== done $(t)"
