#!/usr/bin/env bash
# r54 call 5, carry [".gl"]: x2.xz = main + exp-u.patch + exp-nt.patch (WGLLM_EXP unset: the U patch inert) (WGLLM_EXP_NT sets the lone decode
# attention's workgroup size NT: chunks of NT / 4 keys, so from 1024 threads up to 256 keys are
# one partition with no combine across workgroups; past 128 threads the plain path, not the
# subgroup one). GPU parity of the attention ops at NT 1024, then decode alternated (trimmed to
# the device time left).
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; xz -dc .gl/x2.xz > /tmp/w/x2; chmod +x /tmp/w/x2
nvidia-smi --query-gpu=name --format=csv,noheader
for nt in 1024; do printf "parity NT=%s: " $nt; WGLLM_EXP_NT=$nt timeout 100 /tmp/w/x2 parity --device wgpu:nvidia --filter attention 2>&1 | grep -E "FAIL|passed" | cut -c1-160 | tail -3; done
echo "=== parity done $(t)"
bench() { timeout 60 /tmp/w/x2 bench --shape qwen3-0.6b --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch" | sed 's/^ *//' | cut -c1-100; }
for r in 1 2; do
    for nt in 128 1024; do printf "NT=%-4s bf16 " $nt; WGLLM_EXP_NT=$nt bench --decode 128 --prefill 16; done
    echo "=== round $r $(t)"
done
for nt in 128 1024; do printf "NT=%-4s q4_k " $nt; WGLLM_EXP_NT=$nt bench --quant q4_k --decode 128 --prefill 16; done
for nt in 128 1024; do printf "NT=%-4s bf16 ctx 2064 " $nt; WGLLM_EXP_NT=$nt bench --decode 128 --prefill 2048; done
echo "=== benches done $(t)"
echo "=== done $(t)"
