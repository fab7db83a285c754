#!/usr/bin/env bash
# r40 lease 3: where a lone decode attention chunk's time goes, as shader copies of main (gA):
# N the serial max / denominator loops cut to one element, Z no score or P.V arithmetic (both
# timings only, wrong numbers), U the combine loading 8 records a batch instead of 4 (correct).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gA; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
run() { local v=$1; shift; env ${v:+WGLLM_SHADER_DIR=.gl/sh$v} timeout 90 /tmp/w/gA bench --device wgpu:nvidia --shape qwen3-0.6b "$@" 2>&1 | grep -E "decode batch|batch   1" | head -1; }
for r in 1 2; do for v in "" N Z U; do echo "=== short $v $(t)"; run "$v" --decode 128 --prefill 8; done; done
for v in "" U; do echo "=== prompt 1536 $v $(t)"; run "$v" --batch 1 --as-run --prompt-len 1536 --gen-len 128; done
echo "=== done $(t)"
