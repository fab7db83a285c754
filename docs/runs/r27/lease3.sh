#!/usr/bin/env bash
# r27 lease 3 (H200): the gate/up projection's swiglu in its epilogue (add_rms_norm_linear_swiglu)
# against main, alternated; profiles; parity of add_rms_norm_linear and its teeth on the H200; the
# model gate's tiny case.
# wgllm.xz: 2372bd0 (r26); wgllm-new.xz: 2dc0c45.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
cd /tmp/w
for b in wgllm wgllm-new ops; do xz -dc $R/.gl/$b.xz > $b && chmod +x $b; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
echo "=== warm (main)"
./wgllm bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch"
for rep in 1 2 3; do
  for b in wgllm wgllm-new; do
    for s in qwen3-0.6b qwen3.5-0.8b; do
      echo "=== $b $s decode rep $rep"
      ./$b bench --device wgpu:nvidia --shape $s --decode 128 2>&1 | grep -E "decode batch|CPU time"
    done
  done
done
for b in wgllm wgllm-new; do
  echo "=== $b run decode, 512-token prompt"
  ./$b bench --device wgpu:nvidia --shape qwen3-0.6b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E "batch +1:|decode"
done
echo "=== wgllm-new profile"
./wgllm-new bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --profile 2>&1 | sed -n '/decode step/,/prefill/p' | head -14
cd $R
echo "=== parity add_rms_norm_linear, the teeth (wgpu; cuda refuses by name)"
timeout 200 /tmp/w/ops add_rms_norm_linear 2>&1 | tail -2
timeout 200 /tmp/w/ops norm_swiglu --nocapture 2>&1 | grep -cE "red as expected"
timeout 200 /tmp/w/ops norm_swiglu 2>&1 | tail -2
echo "=== gate tiny"
timeout 300 /tmp/w/wgllm-new gate --case tiny 2>&1 | tail -4
