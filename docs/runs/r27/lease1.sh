#!/usr/bin/env bash
# r27 lease 1 (H200): the grid-barrier probe; one-row matvec R per kind (an experiment build:
# The WGLLM_EXP_R* variables were read by an experiment build of 2372bd0 (linear/mod.rs exp_r, not
# landed: see BENCHMARKS.md r27); wgllm.xz was that build, libtest.xz its lib tests.
# WGLLM_EXP_R* env, not landed); profiles of decode and prefill 2048 at the build's defaults.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w && cd /tmp/w
xz -dc $OLDPWD/.gl/wgllm.xz > wgllm && xz -dc $OLDPWD/.gl/libtest.xz > libtest && chmod +x wgllm libtest
nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv
echo "=== grid sync probe"
WGLLM_BENCH_DEVICE=nvidia timeout 120 ./libtest grid_sync_probe --ignored --nocapture 2>&1 | grep -v "^$"
B="./wgllm bench --device wgpu:nvidia --decode 128"
echo "=== warm"
$B --shape qwen3-0.6b 2>&1 | grep -E "decode batch|CPU time"
for rep in 1 2; do
for rn in 2 4 8; do for rsw in 2 4 8; do
  echo "=== qwen3 RN=$rn RSW=$rsw rep $rep"
  WGLLM_EXP_RN=$rn WGLLM_EXP_RSW=$rsw $B --shape qwen3-0.6b 2>&1 | grep -E "decode batch|CPU time"
done; done; done
for rp in 1 4; do
  echo "=== qwen3 RP=$rp"
  WGLLM_EXP_RP=$rp $B --shape qwen3-0.6b 2>&1 | grep -E "decode batch|CPU time"
done
for rn in 2 4 8; do
  echo "=== qwen3.5 RN=$rn RSW=$rn"
  WGLLM_EXP_RN=$rn WGLLM_EXP_RSW=$rn $B --shape qwen3.5-0.8b 2>&1 | grep -E "decode batch|CPU time"
done
echo "=== profiles at the defaults"
./wgllm bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --prefill 2048 --profile 2>&1 | head -60
nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv
