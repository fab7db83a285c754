#!/usr/bin/env bash
# r53's last call, carry [".gl"] (x0.xz: main + exp-shape.patch, which without WGLLM_EXP is
# main's kernels; g1.xz: the landed commit, the gate/up fused matvec in 32 threads x 4 rows):
# g1's parity of the fused linears on this GPU, then bf16 decode alternated x0 / g1.
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; for b in x0 g1; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 /tmp/w/g1 parity --device wgpu:nvidia --filter add_rms_norm_linear 2>&1 | grep -E "FAIL|passed" | cut -c1-160 | tail -6
echo "=== parity done $(t)"
for r in 1 2; do for b in x0 g1; do
    printf "%s bf16 " $b; timeout 60 /tmp/w/$b bench --shape qwen3-0.6b --device wgpu:nvidia --decode 128 --prefill 16 2>&1 | grep -E "decode batch|dispatches" | sed 's/^ *//' | cut -c1-110
done; done
echo "=== done $(t)"
