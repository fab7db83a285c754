#!/usr/bin/env bash
# r56, readied for the next lease (no device machine came in r56). From the repository root with
# carry [".gl"]; .gl holds the loader .debs and three binaries built here (`cargo build --release
# --bin wgllm`, then `xz -T2 -c target/release/wgllm > .gl/NAME.xz`):
#   g0 = main before r56 (e45917e: r53's kernels, q8_0's q/k/v apart, 314 dispatches a step)
#   g1 = main with r56's quantized views (f690210: q8_0's q/k/v stacked, 147 dispatches)
#   gE = branch exp/r55-linear-add with r56 merged (187a9f4: the residual added in the o and
#        down projections' epilogues, the next projection's norm reading one row)
# 1. q8_0 decode, g0 / g1 / gE alternated, two rounds: what stacking q8_0's q/k/v gives.
# 2. bf16 and q4_k decode, g1 / gE alternated, two rounds: what the branch gives (g0 = g1 there).
# 3. the GPU's parity: g1's quantized linear cases (every type through a view past block 0) and
#    q8_0's fused ops; gE's three fused ops.
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
BINS="g0 g1 gE" timeout 200 tools/bench/ab.sh 2 \
  "--shape qwen3-0.6b --quant q8_0 --decode 128 --prefill 16" 2>&1 | grep -E "^===|decode batch|rror"
BINS="g1 gE" timeout 240 tools/bench/ab.sh 2 \
  "--shape qwen3-0.6b --decode 128 --prefill 16" \
  "--shape qwen3-0.6b --quant q4_k --decode 128 --prefill 16" 2>&1 | grep -E "^===|decode batch|rror"
echo "=== parity $(t)"
mkdir -p /tmp/w; for b in g1 gE; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
for f in "linear[" q8_0; do
  timeout 60 /tmp/w/g1 parity --device wgpu:nvidia --filter "$f" 2>&1 | grep -E "FAIL|passed" | head -5
done
for f in linear_add rms_norm_linear; do
  timeout 60 /tmp/w/gE parity --device wgpu:nvidia --filter $f 2>&1 | grep -E "FAIL|passed" | head -5
done
echo "=== done $(t)"
