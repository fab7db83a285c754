#!/usr/bin/env bash
# r50's lease script, from the repository root with carry [".gl"] (and ".peer" for PEER=1: the two
# with this tree came to more than the device tool's 64 MiB, so call 1 carried .gl only): .gl the loader .debs
# and xz'd binaries built here (`cargo build --release --features hip,cuda --bin wgllm`): g0 = main
# 140d458; gC = g0 + docs/runs/r49/coop-gemm-two-ahead.patch (COOP_GEMM's loads two steps ahead:
# the short prompts' and the quantized prefill's tile); gQ (where present) = branch exp/r50-qnorm
# (5940980: r37's quantized add_rms_norm_linear again, a, b and nw read 16 bytes at a time).
# Call 1 ran PART=1 MAXS=530 on an H100 (call1.log); call 2 was a one-line command (gQ's whole
# parity suite and its q4_k profile: gQ-q4_k-profile.log and BENCHMARKS r50); calls 3 and 4 likewise
# (main as landed on another H100: call3.log, call4.log).
# PART 1 (any GPU): with PEER=1 on an H200 llama.cpp builds in the background (vs-llamacpp.sh
# build); the GPU's greedy anchors recorded by g0 (gate --bless, copied to $OUT), gC's and gQ's parity and gates,
# then the A/Bs: g0/gC prefill, g0/gQ quantized decode (without the build: Qwen3.5 and bf16 decode
# rows too). PART 2 (an H200, right after): the issue's
# other rows (and gQ's checks and A/B where it came after PART 1: QTEST=1) and vs-llamacpp.sh bench
# with $W.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w
for f in .gl/*.xz; do b=$(basename $f .xz); [ -x /tmp/w/$b ] || { xz -dc $f > /tmp/w/$b && chmod +x /tmp/w/$b; }; done
nvidia-smi -L
H200=0; nvidia-smi -L | grep -q H200 && H200=1
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
g() { [ $(( $(date +%s) - T0 )) -lt ${MAXS:-540} ] || { echo "=== out of time $(t)"; exit 0; }; }
run() { g; local b=$1; shift; [ -x /tmp/w/$b ] || return 0; echo "=== $b $* $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|batch +[0-9]+:|prefill [0-9]+:|dispatches|error|rror" | head -6; }
if [ "${PART}" = 1 ]; then
  [ $H200 = 1 ] && [ "${PEER:-0}" = 1 ] && (timeout 585 bash tools/bench/vs-llamacpp.sh build > /tmp/peer-build.log 2>&1; echo "=== peer build rc $? $(t)") &
  # the greedy anchors this GPU has never had: recorded after their oracle checks pass
  g; echo "=== g0 gate --bless $(t)"; timeout 100 /tmp/w/g0 gate --device wgpu:nvidia --bless 2>&1 | grep -E "FAIL|bless|anchor|passed" | cut -c1-160 | tail -6
  for f in $(find tests/anchors -name '*.json' -newermt "@$T0"); do cp $f $OUT/$(echo $f | tr / _); done
  for b in gC gQ; do
    [ -x /tmp/w/$b ] || continue
    g; echo "=== $b parity linear $(t)"; timeout 150 /tmp/w/$b parity --device wgpu:nvidia --filter linear 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -6
    g; echo "=== $b gate $(t)"; timeout 100 /tmp/w/$b gate --device wgpu:nvidia 2>&1 | grep -E "FAIL|fail|passed" | cut -c1-160 | tail -6
  done
  for rep in 1 2; do
    for b in g0 gQ; do run $b --shape qwen3-0.6b --quant q4_k --decode 128; run $b --shape qwen3-0.6b --quant q8_0 --decode 128; done
    for b in g0 gC; do run $b --shape qwen3-0.6b --decode 8 --prefill 512,2048; done
  done
  for b in g0 gC; do run $b --shape qwen3-0.6b --quant q4_k --decode 8 --prefill 2048; done
  if [ $H200 = 1 ] && [ "${PEER:-0}" = 1 ]; then
    echo "=== waiting for the build $(t)"; wait
    grep -E "STEP|rc|error" /tmp/peer-build.log | tail -20; cp /tmp/peer-build.log $OUT/ 2>/dev/null
  else
    run g0 --shape qwen3.5-0.8b --decode 128 --prefill 2048
    run g0 --shape qwen3-0.6b --decode 128
  fi
fi
if [ "${PART}" = 2 ]; then
  run g0 --shape qwen3.5-0.8b --decode 128 --prefill 2048
  # gQ where it came after PART 1 (QTEST=1): its parity and gates, then the quantized decode A/B
  if [ "${QTEST:-0}" = 1 ] && [ -x /tmp/w/gQ ]; then
    g; echo "=== gQ parity linear $(t)"; timeout 150 /tmp/w/gQ parity --device wgpu:nvidia --filter linear 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -6
    g; echo "=== gQ gate $(t)"; timeout 100 /tmp/w/gQ gate --device wgpu:nvidia 2>&1 | grep -E "FAIL|fail|passed" | cut -c1-160 | tail -6
    for b in g0 gQ g0 gQ; do run $b --shape qwen3-0.6b --quant q4_k --decode 128; done
  fi
  g; echo "=== vs-llamacpp bench with $W $(t)"
  WGLLM=/tmp/w/$W OUT=$OUT/vs timeout $(( 590 - $(date +%s) + T0 )) bash tools/bench/vs-llamacpp.sh bench 2>&1 | tail -60
  rm -rf $OUT/vs
fi
echo "=== done $(t)"
