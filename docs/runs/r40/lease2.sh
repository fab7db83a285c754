#!/usr/bin/env bash
# r40 lease 2: the lone decode attention's partition length, as shader copies of main (gA):
# P1 one partition over all keys (no combine), P2 64 keys, P4 128 keys, "" main's (32 keys up
# to 2048-key tables). Short rows (the bench's 16-token prompt) and longer ones (--batch 1
# --as-run: the single-stream kernels, prompts of 512 and 1536).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gA; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
run() { local v=$1; shift; env ${v:+WGLLM_SHADER_DIR=.gl/sh$v} timeout 90 /tmp/w/gA bench --device wgpu:nvidia --shape qwen3-0.6b "$@" 2>&1 | grep -vE "^random|^wgllm|read bandwidth" | tail -3; }
for r in 1 2; do for v in "" P1 P2 P4; do echo "=== short $v $(t)"; run "$v" --decode 128 --prefill 8; done; done
for pl in 512 1536; do for v in "" P1 P2 P4; do echo "=== prompt $pl $v $(t)"; run "$v" --batch 1 --as-run --prompt-len $pl --gen-len 128; done; done
echo "=== done $(t)"
