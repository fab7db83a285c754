#!/usr/bin/env bash
# r27 lease 2 (H200): the grid-barrier probe with atomic words; the lone decode step's value rows
# loaded ahead (VPRE) against main, alternated; its profile; paged parity and the new tooth on the
# H200 (wgpu and cuda).
# wgllm.xz: the r26 tree (2372bd0 + the experiment build of lease 1, its variables unset); wgllm-new.xz:
# the value-row prefetch (VPRE in paged_attention_loop.wgsl), not landed (BENCHMARKS.md r27).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
cd /tmp/w
for b in wgllm wgllm-new libtest ops; do xz -dc $R/.gl/$b.xz > $b && chmod +x $b; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
echo "=== grid sync probe"
WGLLM_BENCH_DEVICE=nvidia timeout 120 ./libtest grid_sync_probe --ignored --nocapture 2>&1 | grep -E "wgpu/|test result|panicked"
echo "=== warm (main)"
./wgllm bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch"
for rep in 1 2 3; do
  for b in wgllm wgllm-new; do
    echo "=== $b qwen3 decode rep $rep"
    ./$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch|CPU time"
  done
done
echo "=== wgllm-new profile"
./wgllm-new bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --profile 2>&1 | sed -n '/decode step/,/prefill/p' | head -14
echo "=== wgllm profile"
./wgllm bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --profile 2>&1 | sed -n '/decode step/,/prefill/p' | head -14
echo "=== parity: paged_attention (wgpu, cuda) and the teeth of the lone steps"
cd $R && timeout 200 /tmp/w/ops paged_attention 2>&1 | tail -3
timeout 120 /tmp/w/ops lone_ --nocapture 2>&1 | grep -cE "red as expected"
timeout 120 /tmp/w/ops lone_ 2>&1 | tail -2
