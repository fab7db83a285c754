#!/usr/bin/env bash
# r42's lease script, run from the repository root with carry [".gl"] (git-ignored: the loader
# .debs and xz'd binaries built here, `cargo build --release --features hip,cuda --bin wgllm`):
# gA = 20c7dd1, gD = 23cab2a, gE = 41c547e (r40's main: widened vectors), gF = 873a05e (r41's
# main), gG = c81d3a5 (the paged prefill's key partitions), gH = e93ab32 (the quantized add + norm
# in the qmatvec's last workgroup), gX = 41c547e + WGLLM_X_NT (branch exp/r41-lone-wide; .gl/shR2
# its shader variant as a whole shader dir of 41c547e), sweepF = de85c0b's lib test binary
# (`cargo test --release --features hip,cuda --lib --no-run`).
# PART=1 ran (lease1-part1.log). PART=3 is the next lease's call (no machine started for it in r42);
# PART=2 (the coop sweep with the rest) did not run either: its machine was taken back mid-call.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gA gD gE gF gG gH gX sweepF; do [ -f .gl/$b.xz ] && xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
run() { local b=$1; shift; echo "=== $b $* $(t)"; timeout 120 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|prefill [0-9]+:|batch +[0-9]+:|error" | head -4; }
if [ "${PART:-1}" = 1 ]; then
  P="--shape qwen3-0.6b --decode 16 --prefill 512,2048"
  for r in 1 2; do run gE $P; run gF $P; done
  for b in gD gE; do run $b --shape qwen3-0.6b --dtype f16 --decode 128 --prefill 8; done
  for b in gD gE; do run $b --shape qwen3-0.6b --decode 128 --prefill 8; done
  for b in gD gE; do run $b --shape qwen3.5-0.8b --decode 128 --prefill 8; done
  for b in gE gD; do run $b --shape qwen3-0.6b --dtype f16 --decode 128 --prefill 8; done
  for b in gA gD; do run $b --shape qwen3-0.6b --quant q4_k --decode 128 --prefill 8; done
  echo "=== gF parity attention[ $(t)"; timeout 200 /tmp/w/gF parity --device wgpu:nvidia --filter "attention[" 2>&1 | grep -E "FAIL|passed" | tail -5
  echo "=== gF gate tiny $(t)"; timeout 200 /tmp/w/gF gate --device wgpu:nvidia --case tiny 2>&1 | tail -3
  echo "=== gF q4_k decode profile $(t)"; timeout 120 /tmp/w/gF bench --device wgpu:nvidia --shape qwen3-0.6b --quant q4_k --decode 32 --prefill 8 --profile 2>&1 | grep -A16 "decode step" | head -18
  echo "=== gF profile prefill 2048 $(t)"; timeout 120 /tmp/w/gF bench --device wgpu:nvidia --shape qwen3-0.6b --decode 16 --prefill 2048 --profile 2>&1 | grep -A8 "prefill 2048: wall"
elif [ "${PART}" = 3 ]; then
  Q="--shape qwen3-0.6b --quant q4_k --decode 128 --prefill 8"
  for r in 1 2; do run gG $Q; run gH $Q; done
  P="--shape qwen3-0.6b --decode 16 --prefill 2048"
  run gF $P; run gG $P
  echo "=== gG profile prefill 2048 $(t)"; timeout 60 /tmp/w/gG bench --device wgpu:nvidia --shape qwen3-0.6b --decode 16 --prefill 2048 --profile 2>&1 | grep -A9 "prefill 2048: wall"
  nt() { local n=$1 d=$2; shift 2; echo "=== gX NT=$n shaders=$d $* $(t)"; env WGLLM_X_NT=$n ${d:+WGLLM_SHADER_DIR=$d} timeout 60 /tmp/w/gX bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|batch +[0-9]+:|error" | head -2; }
  D="--shape qwen3-0.6b --decode 128 --prefill 8"
  run gE $D; nt 128 "" $D; nt 512 .gl/shR2 $D; nt 512 "" $D
  for f in "linear_add_rms_norm[" "paged_attention["; do echo "=== gH parity $f $(t)"; timeout 60 /tmp/w/gH parity --device wgpu:nvidia --filter "$f" 2>&1 | grep -E "FAIL|passed|600/600|530/1100|520/520" | tail -12; done
  echo "=== attention sweep $(t)"; WGLLM_BENCH_DEVICE=nvidia timeout 50 /tmp/w/sweepF attention_sweep --ignored --nocapture 2>&1 | tee ${OUT:-/tmp}/attention-sweep.log | grep -E "FAIL|^T|TILES|p[0-9]+sg|check dh128" | head -40
fi
echo "=== done $(t)"
