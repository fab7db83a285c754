#!/usr/bin/env bash
# r47's lease script, run from the repository root with carry [".gl"] (git-ignored: the loader
# .debs and xz'd binaries built here with `cargo build --release --features hip,cuda --bin wgllm`):
# gZ = 4194b6d (main's code); gP = gZ + prefetch-dropped.patch (the count of next tensors from
# WGLLM_PREFETCH_EXP, an experiment build only); gE = gZ + wide-tiles-dropped.patch (the wide GEMM
# tile from WGLLM_WIDE_EXP); gK = gZ + kv-staged-together-dropped.patch. PART 1 ran as call 1
# (call1-part1.log), PART 2 as call 2 (call2-part2.log), PART 3 as call 3 (call3-part3.log), each on
# an H100.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w
for f in .gl/*.xz; do b=$(basename $f .xz); xz -dc $f > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
# run BIN PF ARGS: PF the prefetch count (gP), "-" for gZ
run() { local b=$1 pf=$2; shift 2; echo "=== $b pf=$pf $* $(t)"; WGLLM_PREFETCH_EXP=$pf timeout 120 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|prefill [0-9]+:|error|rror" | head -4; }
if [ "${PART}" = 1 ]; then
  echo "=== gP gate tiny $(t)"; timeout 120 /tmp/w/gP gate --device wgpu:nvidia --case tiny 2>&1 | tail -12 | cut -c1-200
  for rep in 1 2; do for v in "gZ -" "gP 0" "gP 3" "gP 2" "gP 1"; do run $v --shape qwen3-0.6b --decode 128 --prefill 16; done; done
  for rep in 1 2; do for v in "gZ -" "gP 3"; do run $v --shape qwen3-0.6b --quant q4_k --decode 128 --prefill 16; done; done
  for pf in 0 3; do echo "=== gP pf=$pf profile $(t)"; WGLLM_PREFETCH_EXP=$pf timeout 120 /tmp/w/gP bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 16 --profile 2>&1 | tee ${OUT:-/tmp}/gP-pf$pf-profile.log | grep -B3 -A8 "decode step: wall"; done
fi
if [ "${PART}" = 2 ]; then
  # gE = gZ + coop tiles of up to 16 accumulators a subgroup (valid) and the wide GEMM tile from
  # WGLLM_WIDE_EXP=wn,tn,wm,tm,bk (an experiment build only; unset: main's 4,2,4,4,32)
  for w in 2,4,4,4,32 4,4,2,4,32; do echo "=== gE wide=$w parity linear $(t)"; WGLLM_WIDE_EXP=$w timeout 100 /tmp/w/gE parity --device wgpu:nvidia --filter "linear[" 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -4; done
  runw() { local w=$1; shift; echo "=== gE wide=$w $* $(t)"; WGLLM_WIDE_EXP=$w timeout 120 /tmp/w/gE bench --device wgpu:nvidia "$@" 2>&1 | grep -E "prefill [0-9]+:|error|rror" | head -3; }
  for rep in 1 2; do for w in main 2,4,4,4,32 4,4,2,4,32 2,4,2,4,32 2,4,4,4,16; do runw $w --shape qwen3-0.6b --decode 8 --prefill 512,2048; done; done
  for w in main 2,4,4,4,32 4,4,2,4,32 2,4,2,4,32; do echo "=== gE wide=$w profile $(t)"; WGLLM_WIDE_EXP=$w timeout 120 /tmp/w/gE bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | tee ${OUT:-/tmp}/gE-$w-profile.log | grep -A6 "prefill 2048: wall"; done
fi
if [ "${PART}" = 3 ]; then
  # gK = gZ + the prefill attention's keys and values staged together (three barriers a block)
  echo "=== gK parity attention $(t)"; timeout 150 /tmp/w/gK parity --device wgpu:nvidia --filter "attention[" 2>&1 | grep -E "FAIL|skip|passed" | cut -c1-220 | tail -6
  for rep in 1 2 3; do for b in gZ gK; do run $b - --shape qwen3-0.6b --decode 8 --prefill 512,2048; done; done
  for b in gZ gK; do run $b - --shape qwen3.5-0.8b --decode 8 --prefill 2048; done
  for b in gZ gK; do echo "=== $b profile $(t)"; timeout 120 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | tee ${OUT:-/tmp}/$b-profile.log | grep -A2 "prefill 2048: wall"; done
fi
