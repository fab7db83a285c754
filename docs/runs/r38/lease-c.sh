#!/usr/bin/env bash
# r38 lease c (H200), carry [".gl"] (gb, gbops, gb0 and the debs only): layer_bridge (742d5f4,
# binary gb / ops binary gbops): a lone decode step's o, gate/up, down and the next layer's q/k/v
# projections in one dispatch whose workgroups meet at grid barriers, on WGLLM_GRID_GROUPS
# workgroups (0: off, main's default). gb0 = gb with only thread 0 of a workgroup spinning at the
# barrier (then a workgroup barrier) instead of every invocation: less polling of the counter.
# Its cases across workgroups first (lavapipe ran one workgroup only), then bf16 / f16 decode A/B
# at 0 / 132 / 66 workgroups, 264 last (a grid that does not fit hangs at its first barrier).
# Also r37's quantized add_rms_norm_linear (in gb: a q4_k step in 147 dispatches, was 230) on the
# H200: its cases, and q4_k / q8_0 decode against gr (r35's main c45870c, before it).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gb gbops gb0 gr; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
ops() { WGLLM_GRID_GROUPS=$1 timeout 120 /tmp/w/gbops layer_bridge --skip ::hip --skip ::cuda --skip ::cpu 2>&1 | grep -E "nmse|panicked|^[0-9]+ passed" | head -12; }
dec() { WGLLM_GRID_GROUPS=$2 timeout 60 /tmp/w/$1 bench --device wgpu:nvidia --shape qwen3-0.6b --dtype $3 --decode 128 --prefill 8 2>&1 | grep -E "decode batch|dispatches"; }
echo "=== ops layer_bridge G=132 $(t)"; ops 132
echo "=== ops layer_bridge G=66 $(t)"; ops 66
for b in gb gb0; do echo "=== $b gate tiny G=132 $(t)"; WGLLM_GRID_GROUPS=132 timeout 90 /tmp/w/$b gate --case tiny --device wgpu:nvidia 2>&1 | grep -iE "fail|passed" | head -4; done
for r in 1 2; do for bg in "gb 0" "gb 132" "gb0 132" "gb 66" "gb0 66"; do set -- $bg; echo "=== $1 bf16 decode G=$2 $(t)"; dec $1 $2 bf16; done; done
for bg in "gb 0" "gb 132" "gb0 132"; do set -- $bg; echo "=== $1 f16 decode G=$2 $(t)"; dec $1 $2 f16; done
echo "=== gbops add_rms_norm_linear $(t)"; timeout 150 /tmp/w/gbops add_rms_norm_linear --skip ::hip --skip ::cuda --skip ::cpu 2>&1 | grep -E "nmse|panicked|^[0-9]+ passed" | head -8
for q in q4_k q8_0; do for b in gr gb gr gb; do echo "=== $b $q decode $(t)"; WGLLM_GRID_GROUPS=0 timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --quant $q --decode 128 --prefill 8 2>&1 | grep -E "decode batch|dispatches"; done; done
echo "=== gb profile G=132 $(t)"; WGLLM_GRID_GROUPS=132 timeout 60 /tmp/w/gb bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --prefill 8 --profile 2>&1 | grep -A12 "decode step:" | head -14
echo "=== ops layer_bridge G=264 $(t)"; ops 264
for bg in "gb 264" "gb0 264"; do set -- $bg; echo "=== $1 bf16 decode G=$2 $(t)"; dec $1 $2 bf16; done
echo "=== done $(t)"
