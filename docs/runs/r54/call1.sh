#!/usr/bin/env bash
# r54 call 1, carry [".gl"]: g1.xz = main at fdcacd3 (r53's landed gate/up shape), x1.xz = main +
# exp-u.patch (WGLLM_EXP=class=WGxRxU overrides a one-token float matvec class's workgroup, rows
# and steps a trip; without it main's kernels). g1's GPU parity (r53's verify), then bf16 decode
# alternated over the U variants, then profiles of the base and the best guess.
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; for b in x1 g1; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 /tmp/w/g1 parity --device wgpu:nvidia --filter add_rms_norm_linear 2>&1 | grep -E "FAIL|passed" | cut -c1-160 | tail -6
echo "=== g1 parity done $(t)"
bench() { timeout 60 "$@" bench --shape qwen3-0.6b --device wgpu:nvidia --decode 128 --prefill 16 2>&1 | grep -E "decode batch" | sed 's/^ *//' | cut -c1-100; }
V=("" "fs=32x4x8" "fs=32x4x16" "fn=64x2x8" "fo=128x1x8" "fd=128x1x12" "fs=32x4x16,fn=64x2x8,fo=128x1x8,fd=128x1x12")
for r in 1 2; do
    printf "g1 base    "; bench /tmp/w/g1
    for v in "${V[@]}"; do printf "x1 [%s] " "$v"; WGLLM_EXP=$v bench /tmp/w/x1; done
    echo "=== round $r $(t)"
done
for v in "" "fs=32x4x16,fn=64x2x8,fo=128x1x8,fd=128x1x12"; do
    echo "--- profile [$v]"
    WGLLM_EXP=$v timeout 60 /tmp/w/x1 bench --shape qwen3-0.6b --device wgpu:nvidia --decode 128 --prefill 16 --profile 2>&1 | sed -n '/decode batch/,/prefill 16: wall/p' | head -14
done
echo "=== done $(t)"
