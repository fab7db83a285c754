#!/usr/bin/env bash
# r39 lease 2 (carry .gl): the float matvec's norm-fused variants (qkv, gate/up) without wgpu's
# runtime checks (g1) against main (g0), and g0 with every kernel unchecked (WGLLM_SHADER_CHECKS=0),
# alternated; g1's bench also warms up until steady. Then g1's parity on the GPU.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in g0 g1 g1ops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
dec() { local b=$1 c=$2 s=$3; shift 3; echo "=== $b checks=$c $s $* $(t)"; WGLLM_SHADER_CHECKS=$c timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape $s "$@" --decode 128 --prefill 8 2>&1 | grep -E "decode batch|dispatches"; }
dec g1 d qwen3-0.6b --dtype bf16
for r in 1 2 3; do dec g0 d qwen3-0.6b --dtype bf16; dec g1 d qwen3-0.6b --dtype bf16; dec g0 0 qwen3-0.6b --dtype bf16; done
for r in 1 2; do dec g0 d qwen3-0.6b --dtype f16; dec g1 d qwen3-0.6b --dtype f16; done
for r in 1 2; do dec g0 d qwen3.5-0.8b --dtype bf16; dec g1 d qwen3.5-0.8b --dtype bf16; done
echo "=== g1 profile $(t)"; timeout 60 /tmp/w/g1 bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --prefill 8 --profile 2>&1 | grep -A8 "decode step:"
echo "=== g1ops add_rms_norm_linear $(t)"; timeout 150 /tmp/w/g1ops add_rms_norm_linear --skip ::hip --skip ::cuda --skip ::cpu 2>&1 | grep -E "panicked|FAIL|test result|^[0-9]+ passed" | tail -6
echo "=== g1ops linear[ $(t)"; timeout 100 /tmp/w/g1ops "linear[" --skip ::hip --skip ::cuda --skip ::cpu 2>&1 | grep -E "panicked|FAIL|test result|^[0-9]+ passed" | tail -6
echo "=== g1 gate tiny $(t)"; timeout 120 /tmp/w/g1 gate --case tiny --device wgpu:nvidia 2>&1 | grep -iE "fail|passed" | tail -4
echo "=== done $(t)"
