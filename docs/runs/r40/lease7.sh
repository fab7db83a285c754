#!/usr/bin/env bash
# r40 lease 7: f16 bits decoded without branches (gD, exact) against main's branchy decode (gA),
# alternated; then gD's parity on this GPU for the ops the decode touches.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gA gD gDops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
run() { local b=$1; shift; echo "=== $b $* $(t)"; timeout 60 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch" | head -1; }
for f in "ops::cast" "ops::add_rms_norm_linear" "ops::rms_norm" "ops::embedding"; do echo "=== gDops $f $(t)"; timeout 60 /tmp/w/gDops "$f" --skip ::hip --skip ::cuda --skip ::cpu 2>&1 | grep -E "panicked|FAIL|^[0-9]+ passed" | tail -4; done
for r in 1 2; do for b in gA gD; do run $b --shape qwen3-0.6b --dtype f16 --decode 128 --prefill 8; done; done
for b in gA gD; do run $b --shape qwen3.5-0.8b --dtype f16 --decode 128 --prefill 8; done
run gD --shape qwen3-0.6b --dtype bf16 --decode 128 --prefill 8
echo "=== done $(t)"
