#!/usr/bin/env bash
# r49's lease script, run from the repository root with carry [".gl", ".peer"] (git-ignored: the
# loader .debs and xz'd binaries built here with `cargo build --release --features hip,cuda --bin
# wgllm`; .peer: ../shared/tools/llamacpp-peer's kit). gN = main 7a59c56 (the pair tile);
# gM = gN + docs/runs/r48/hi-lo-blocks.patch (x's hi and lo rows in one accumulator).
# PART 1: llama.cpp built in the background (vs-llamacpp.sh build) while gM's parity and model
# gates run on the GPU (correctness only: the build loads the CPUs). PART 2, on the same warm
# machine right after: gN / gM prefill 2048 alternated, then vs-llamacpp.sh bench with $W.
# Calls: 1 = PART 1 (call1.log), 2 = PART 2 on the same warm H100 (call2.log), then six asks
# refused; 3 = PART 4 on another H100 (call3.log; PART 3 never ran: its binary's switches are
# docs/runs/r49/switches-exp.patch, against ce7f07f); 4 = this inline command on that warm machine
# (call4.log):
#   for r in 1 2; do pb gX WGLLM_X_AHEAD=1 WGLLM_X_FLUSH=1; pb gL X=0; done
# with pb as PART 4's without the time guard. gX = ce7f07f + switches-exp.patch; gL = 9f94e95
# (main's wide tile with its loads two steps ahead, built before the early submit landed).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w
for f in .gl/*.xz; do b=$(basename $f .xz); [ -x /tmp/w/$b ] || { xz -dc $f > /tmp/w/$b && chmod +x /tmp/w/$b; }; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
g() { [ $(( $(date +%s) - T0 )) -lt ${MAXS:-540} ] || { echo "=== out of time $(t)"; exit 0; }; }
run() { g; local b=$1; shift; echo "=== $b $* $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|unsteady|prefill [0-9]+:|error|rror" | head -5; }
if [ "${PART}" = 1 ]; then
  (timeout 585 bash tools/bench/vs-llamacpp.sh build > /tmp/peer-build.log 2>&1; echo "=== peer build rc $? $(t)") &
  g; echo "=== gM parity linear $(t)"; timeout 150 /tmp/w/gM parity --device wgpu:nvidia --filter "linear" 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -6
  g; echo "=== gM gate (every case) $(t)"; timeout 200 /tmp/w/gM gate --device wgpu:nvidia 2>&1 | grep -E "FAIL|fail|passed|skip" | cut -c1-200 | tail -12
  g; echo "=== gM parity (every case) $(t)"; timeout 240 /tmp/w/gM parity --device wgpu:nvidia 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -12
  echo "=== waiting for the build $(t)"; wait
  grep -E "STEP|rc|error" /tmp/peer-build.log | tail -20; cp /tmp/peer-build.log $OUT/ 2>/dev/null
fi
if [ "${PART}" = 2 ]; then
  for rep in 1 2; do for b in gN gM; do run $b --shape qwen3-0.6b --decode 8 --prefill 2048; done; done
  g; echo "=== vs-llamacpp bench with $W $(t)"
  WGLLM=/tmp/w/$W OUT=$OUT/vs timeout $(( 590 - $(date +%s) + T0 )) bash tools/bench/vs-llamacpp.sh bench 2>&1 | tail -60
  rm -rf $OUT/vs
fi
if [ "${PART}" = 3 ]; then
  # gX = main ce7f07f + experiment switches: WGLLM_WIDE_EXP=wn,tn,wm,tm,bk,nbuf,xkd (the wide GEMM
  # tile), WGLLM_X_FLUSH=n (a prefill of 64 rows or more submits after its first n layers),
  # WGLLM_X_AHEAD=1 (the one-stage coop GEMM's loads two steps ahead)
  pb() { g; echo "=== gX $* $(t)"; timeout 100 env "$@" /tmp/w/gX bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 512,2048 2>&1 | grep -E "prefill [0-9]+:|rror" | head -3; }
  prof() { g; local tag=$1; shift; echo "=== $tag profile $(t)"; timeout 100 env "$@" /tmp/w/gX bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | tee $OUT/$tag-profile.log | grep -A4 "prefill 2048: wall"; }
  for rep in 1 2; do pb X=0; pb WGLLM_X_AHEAD=1; pb WGLLM_X_FLUSH=1; done
  prof main X=0
  prof ahead WGLLM_X_AHEAD=1
  for v in 4,2,4,2,16,1,1 4,2,2,2,32,2,1; do prof w${v//,/_} WGLLM_WIDE_EXP=$v; done
  g; echo "=== gX parity linear, ahead $(t)"; WGLLM_X_AHEAD=1 timeout 60 /tmp/w/gX parity --device wgpu:nvidia --filter "linear" 2>&1 | grep -E "FAIL|passed" | cut -c1-200 | tail -4
  for q in q4_k q8_0; do g; echo "=== gX $q decode profile $(t)"; timeout 100 /tmp/w/gX bench --device wgpu:nvidia --shape qwen3-0.6b --quant $q --decode 8 --prefill 8 --profile 2>&1 | tee $OUT/$q-decode-profile.log | grep -B3 -A16 "decode step: wall"; done
  for rep in 1 2; do pb X=0; pb WGLLM_X_AHEAD=1 WGLLM_X_FLUSH=1; pb WGLLM_WIDE_EXP=4,2,4,2,16,1,1 WGLLM_X_AHEAD=1; done
fi
if [ "${PART}" = 4 ]; then
  # gL = main 0c12ff2 + the wide GEMM tile's loads two steps ahead (Coop::two_ahead); gX as PART 3
  # (its switches off: main's kernels)
  pb() { g; local b=$1; shift; echo "=== $b $* $(t)"; timeout 100 env "$@" /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 512,2048 2>&1 | grep -E "decode batch|prefill [0-9]+:|rror" | head -3; }
  for rep in 1 2; do pb gX X=0; pb gL X=0; done
  g; echo "=== gL parity linear $(t)"; timeout 100 /tmp/w/gL parity --device wgpu:nvidia --filter "linear" 2>&1 | grep -E "FAIL|passed" | cut -c1-200 | tail -4
  g; echo "=== gL gate $(t)"; timeout 100 /tmp/w/gL gate --device wgpu:nvidia 2>&1 | grep -E "FAIL|fail|passed" | cut -c1-160 | tail -5
  pb gX WGLLM_X_FLUSH=1; pb gL X=0; pb gX X=0
  g; echo "=== gX q4_k decode profile $(t)"; timeout 100 /tmp/w/gX bench --device wgpu:nvidia --shape qwen3-0.6b --quant q4_k --decode 8 --prefill 8 --profile 2>&1 | tee $OUT/q4_k-decode-profile.log | grep -B3 -A16 "decode step: wall"
  prof() { g; local tag=$1 b=$2; shift 2; echo "=== $tag profile $(t)"; timeout 100 env "$@" /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | tee $OUT/$tag-profile.log | grep -A4 "prefill 2048: wall"; }
  prof gL gL X=0
fi
echo "=== done $(t)"
