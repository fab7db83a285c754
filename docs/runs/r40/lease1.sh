#!/usr/bin/env bash
# r40 lease 1: q4_k / q8_0 decode with the quantized swiglu epilogue (gA = main 20c7dd1) against
# the tree before it (gB = c95c588), alternated; then where the lone decode attention's time goes
# (profiles with shader copies: shS skips the partition combine, shF the q/k norm, RoPE and
# cache write; both give wrong numbers and serve only as timings).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gA gB; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
dec() { local b=$1 s=$2; shift 2; echo "=== $b $s $* $(t)"; timeout 90 /tmp/w/$b bench --device wgpu:nvidia --shape $s "$@" --decode 128 --prefill 8 2>&1 | grep -E "decode batch|rror"; }
prof() { local v=$1; echo "=== profile $v $(t)"; env ${v:+WGLLM_SHADER_DIR=$v} timeout 90 /tmp/w/gA bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --prefill 8 --profile 2>&1 | grep -E "decode step|paged_attention_lone|matvec|dispatches/step|decode batch" | head -12; }
for r in 1 2; do dec gA qwen3-0.6b --quant q4_k; dec gB qwen3-0.6b --quant q4_k; done
dec gA qwen3-0.6b --quant q8_0; dec gB qwen3-0.6b --quant q8_0
prof ""; prof .gl/shS; prof .gl/shF
for v in "" .gl/shS .gl/shF; do echo "=== bf16 $v $(t)"; env ${v:+WGLLM_SHADER_DIR=$v} timeout 60 /tmp/w/gA bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 --prefill 8 2>&1 | grep -E "decode batch"; done
echo "=== done $(t)"
