#!/usr/bin/env bash
# r40 lease 4: main (gA = 20c7dd1) on the figures, one call: Qwen3-0.6B decode in bf16,
# f16, q8_0, q4_k, Qwen3.5-0.8B bf16, prefill 512 / 2048 bf16, and 64-sequence serving.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gA; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
run() { echo "=== $* $(t)"; timeout 120 /tmp/w/gA bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|prefill [0-9]|batch  *[0-9]+:|limit|rror" | head -6; }
run --shape qwen3-0.6b --dtype bf16 --decode 128 --prefill 512,2048
run --shape qwen3-0.6b --dtype f16 --decode 128 --prefill 8
run --shape qwen3-0.6b --quant q8_0 --decode 128 --prefill 8
run --shape qwen3-0.6b --quant q4_k --decode 128 --prefill 8
run --shape qwen3.5-0.8b --dtype bf16 --decode 128 --prefill 8
run --shape qwen3-0.6b --dtype bf16 --decode 128 --prefill 8
run --shape qwen3-0.6b --dtype bf16 --batch 1,64
echo "=== done $(t)"
