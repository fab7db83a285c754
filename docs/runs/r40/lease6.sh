#!/usr/bin/env bash
# r40 lease 6: f16 bits decoded by the hardware's unpack2x16float (gC) against main's integer
# decode (gA), alternated; gC's f16 profile; then gC's parity on this GPU for the ops it touches.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gA gC gCops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
run() { local b=$1; shift; echo "=== $b $* $(t)"; timeout 90 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|batch  *[0-9]+:" | head -3; }
for r in 1 2; do for b in gA gC; do run $b --shape qwen3-0.6b --dtype f16 --decode 128 --prefill 8; done; done
for b in gA gC; do run $b --shape qwen3-0.6b --dtype bf16 --decode 128 --prefill 8; done
for b in gA gC; do run $b --shape qwen3-0.6b --dtype bf16 --batch 64; done
for b in gA gC; do run $b --shape qwen3.5-0.8b --dtype f16 --decode 128 --prefill 8; done
echo "=== gC f16 profile $(t)"; timeout 90 /tmp/w/gC bench --device wgpu:nvidia --shape qwen3-0.6b --dtype f16 --decode 64 --prefill 8 --profile 2>&1 | grep -E "decode step|^    " | grep -v m8u4 | head -6
for f in "ops::cast" "ops::add_rms_norm_linear" "ops::embedding" "ops::rms_norm" "ops::paged_attention[" "ops::linear["; do echo "=== gCops $f $(t)"; timeout 100 /tmp/w/gCops "$f" --skip ::hip --skip ::cuda --skip ::cpu 2>&1 | grep -E "panicked|FAIL|^[0-9]+ passed" | tail -4; done
echo "=== done $(t)"
