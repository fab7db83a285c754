#!/usr/bin/env bash
# r40 lease 5: why f16 decodes slower than bf16 (main gA): both decode steps' profiles.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gA; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
for d in f16 bf16 f16 bf16; do echo "=== profile $d $(t)"; timeout 90 /tmp/w/gA bench --device wgpu:nvidia --shape qwen3-0.6b --dtype $d --decode 64 --prefill 8 --profile 2>&1 | grep -E "decode step|decode batch|dispatches/step|^    " | grep -v "m8u4" | head -14; done
echo "=== done $(t)"
