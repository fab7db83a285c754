#!/usr/bin/env bash
# r53's second call, carry [".gl"] (.gl: loader .debs, x0.xz = main + exp-shape.patch: WGLLM_EXP
# overrides a lone decode step's matvec workgroup (threads x rows) by class: fn the float
# add + norm + q/k/v projection, fs the float add + norm + gate/up + swiglu, fp the float o and
# down (K >= 2048), qn / qs the q4_k ones, qx q4_k's o and down (qmatvec_xs: 32-thread groups x rows)).
# One factor at a time against the default, the default again every few lines.
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; xz -dc .gl/x0.xz > /tmp/w/x0; chmod +x /tmp/w/x0
nvidia-smi --query-gpu=name --format=csv,noheader
run() { # dtype-args exp
    printf "%-14s %-22s" "$1" "${2:-default}"
    WGLLM_EXP="$2" timeout 60 /tmp/w/x0 bench --shape qwen3-0.6b $3 --device wgpu:nvidia --decode 128 --prefill 16 2>&1 \
        | grep -E "decode batch|rror" | sed 's/^ *//' | cut -c1-90
}
for c in "" qx=256x2 qx=256x1 qx=128x1 "" qs=32x2 qs=32x6 qs=64x4 "" qn=32x2 qn=32x6 qn=64x4 ""; do
    run q4_k "$c" "--quant q4_k"
done
echo "=== $(t)"
for c in "" fs=64x4 fs=32x4 fs=128x2 "" fn=64x4 fn=32x4 fn=128x2 "" fp=128x2 fp=64x2 fp=256x1 ""; do
    run bf16 "$c" ""
done
echo "=== done $(t)"
