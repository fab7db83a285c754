#!/usr/bin/env bash
# r48's lease script, run from the repository root with carry [".gl"] (git-ignored: the loader
# .debs, xz'd binaries built here with `cargo build --release --features hip,cuda --bin wgllm`, and
# timing-only shader copies). gZ = db72c8a (main's code before r48); gQ = 7b0945d (main's pair tile, 7a59c56, as first built:
# with two experiment switches (WGLLM_X_NOPAIR=1: off; WGLLM_X_PAIR=1: taken for every prefill whose
# groups pair up)); gF = gZ + r47's wide-tiles-dropped.patch (the wide GEMM tile from
# WGLLM_WIDE_EXP=wn,tn,wm,tm,bk[,nbuf[,xkd]]) + hi-lo-blocks.patch's kernel (xkd 1) +
# WGLLM_X_NOMMA (the GEMM's products left out: a timing only). sdA/sdC/sdD: linear_coop.wgsl with
# x's lo rows zero / no global loads / nothing staged (timing only). PART 1 ran as call 1 on an H100
# (call1.log, `MAXS=330`); call 2 was an inline command on the same machine (call2.log); PART 2
# (gM = main with hi-lo-blocks.patch) did not run: no device time was left.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w
for f in .gl/*.xz; do b=$(basename $f .xz); xz -dc $f > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
# g: stop cleanly once MAXS seconds have gone (the call's limit less a margin)
g() { [ $(( $(date +%s) - T0 )) -lt ${MAXS:-540} ] || { echo "=== out of time $(t)"; exit 0; }; }
run() { g; local b=$1; shift; echo "=== $b $* $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|unsteady|prefill [0-9]+:|error|rror" | head -5; }
prof() { g; local tag=$1 b=$2; shift 2; echo "=== $tag profile $(t)"; timeout 150 env "$@" /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile ${DT:-} 2>&1 | tee ${OUT:-/tmp}/$tag-profile.log | grep -A5 "prefill 2048: wall"; }
if [ "${PART}" = 1 ]; then
  for rep in 1 2; do for b in gZ gQ; do run $b --shape qwen3-0.6b --decode 8 --prefill 2048; done; done
  for w in 4,2,4,2,32,1,1 4,2,2,2,32,1,1 4,2,2,4,32,1,1 4,2,4,4,32,1,1 4,2,4,4,32; do prof kd${w//,/_} gF WGLLM_WIDE_EXP=$w; done
  prof pairon gQ X=1
  prof pairoff gQ WGLLM_X_NOPAIR=1
  g; echo "=== gQ parity attention, pair forced $(t)"; WGLLM_X_PAIR=1 timeout 120 /tmp/w/gQ parity --device wgpu:nvidia --filter "attention[" 2>&1 | grep -E "FAIL|skip|passed" | cut -c1-220 | tail -8
  prof nomma gF WGLLM_X_NOMMA=1
  for v in sdA sdC sdD; do prof $v gZ WGLLM_SHADER_DIR=$R/.gl/$v; done
  DT="--dtype f16" prof f16 gZ X=1
  run gZ --shape qwen3-0.6b --decode 128 --prefill 512
fi
if [ "${PART}" = 2 ]; then
  # gM = main with PAIR_TILE and the wide GEMM's hi and lo rows in one accumulator
  g; echo "=== gM parity linear/swiglu $(t)"; timeout 100 /tmp/w/gM parity --device wgpu:nvidia --filter "linear" 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -6
  for b in gZ gM; do run $b --shape qwen3-0.6b --decode 8 --prefill 2048; done
  g; echo "=== gM gate tiny $(t)"; timeout 90 /tmp/w/gM gate --device wgpu:nvidia --case tiny 2>&1 | grep -E "FAIL|fail|passed" | cut -c1-200 | tail -8
  for b in gZ gM; do run $b --shape qwen3-0.6b --decode 8 --prefill 2048; done
fi
