#!/usr/bin/env bash
# r27 lease 4 (H200): per-kernel decode profiles with wgpu's runtime checks (the default) and
# without (WGLLM_SHADER_CHECKS=0), both models, binary 2dc0c45.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w && cd /tmp/w
xz -dc $R/.gl/wgllm-new.xz > wgllm && chmod +x wgllm
./wgllm bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch"
for s in qwen3.5-0.8b qwen3-0.6b; do
  for c in default 0; do
    echo "=== $s checks $c"
    if [ $c = 0 ]; then export WGLLM_SHADER_CHECKS=0; else unset WGLLM_SHADER_CHECKS; fi
    ./wgllm bench --device wgpu:nvidia --shape $s --decode 128 2>&1 | grep -E "decode batch|CPU time"
    ./wgllm bench --device wgpu:nvidia --shape $s --decode 64 --profile 2>&1 | sed -n '/decode step/,/prefill/p' | head -18
  done
done
