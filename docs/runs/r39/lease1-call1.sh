#!/usr/bin/env bash
# r39 lease 1, call 1 (carry .gl .peer): llama.cpp built in the background (vs-llamacpp.sh build),
# meanwhile on the GPU: r37's attention_sweep and the coop GEMM sweep (never run on a GPU), and
# main's (ec0f634) decode + prefill profile. GPU-timestamp columns are what count here (the build
# loads the CPUs).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gt g0; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
(timeout 585 bash tools/bench/vs-llamacpp.sh build > $OUT/peer-build.log 2>&1; echo "=== peer build rc $? $(t)") &
echo "=== attention_sweep $(t)"
WGLLM_BENCH_DEVICE=nvidia timeout 200 /tmp/w/gt attention_sweep --ignored --nocapture 2>&1 | grep -vE "^running|^$" | tail -40
echo "=== coop sweep $(t)"
WGLLM_BENCH_DEVICE=nvidia WGLLM_LINEAR_SWEEP=coop timeout 170 /tmp/w/gt linear::sweep --ignored --nocapture 2>&1 | grep -vE "^running|^$" | tail -60
echo "=== g0 profile $(t)"
timeout 90 /tmp/w/g0 bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --prefill 2048 --profile 2>&1 | grep -v "^random" | head -60
echo "=== waiting for the build $(t)"
wait
grep -E "STEP|rc" $OUT/peer-build.log | tail -20
echo "=== done $(t)"
