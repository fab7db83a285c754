#!/usr/bin/env bash
# r38 lease c (H200), carry [".gl"]: layer_bridge (742d5f4, binary gb / ops binary gbops): a lone
# decode step's o, gate/up, down and the next layer's q/k/v projections in one dispatch whose
# workgroups meet at grid barriers, on WGLLM_GRID_GROUPS workgroups (0: off, main's default).
# Its cases across workgroups first (lavapipe ran one workgroup only), then bf16 / f16 decode A/B
# at 0 / 132 / 264 workgroups (the larger last: a grid that does not fit hangs at its barrier).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gb gbops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
ops() { WGLLM_GRID_GROUPS=$1 timeout 120 /tmp/w/gbops layer_bridge --skip ::hip --skip ::cuda --skip ::cpu 2>&1 | grep -E "nmse|panicked|^[0-9]+ passed" | head -12; }
dec() { WGLLM_GRID_GROUPS=$1 timeout 60 /tmp/w/gb bench --device wgpu:nvidia --shape qwen3-0.6b --dtype $2 --decode 128 --prefill 8 2>&1 | grep -E "decode batch|dispatches"; }
echo "=== ops layer_bridge G=132 $(t)"; ops 132
echo "=== ops layer_bridge G=66 $(t)"; ops 66
echo "=== gate tiny G=132 $(t)"; WGLLM_GRID_GROUPS=132 timeout 90 /tmp/w/gb gate --case tiny --device wgpu:nvidia 2>&1 | grep -iE "fail|passed" | head -6
for g in 0 132 66 0 132 66; do echo "=== bf16 decode G=$g $(t)"; dec $g bf16; done
for g in 0 132; do echo "=== f16 decode G=$g $(t)"; dec $g f16; done
echo "=== profile G=132 $(t)"; WGLLM_GRID_GROUPS=132 timeout 60 /tmp/w/gb bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --prefill 8 --profile 2>&1 | grep -A12 "decode step:" | head -14
echo "=== ops layer_bridge G=264 $(t)"; ops 264
for g in 264 264; do echo "=== bf16 decode G=$g $(t)"; dec $g bf16; done
echo "=== done $(t)"
