#!/usr/bin/env bash
# The next lease's script (written at the end of r49, not yet run), from the repository root with
# carry [".gl", ".peer"]: .gl the loader .debs and xz'd binaries built here (`cargo build --release
# --features hip,cuda --bin wgllm`): g0 = main (cfda6a5 or later), gC = g0 +
# docs/runs/r49/coop-gemm-two-ahead.patch (COOP_GEMM's loads two steps ahead as well: the short
# prompts' and the quantized prefill's tiles); .peer the llamacpp-peer kit (make-kit.sh .peer).
# PART 1: llama.cpp built in the background (vs-llamacpp.sh build) while g0's and gC's parity and
# gates run (correctness only). PART 2 on the same warm machine right after: the A/B, the issue's
# other rows, then vs-llamacpp.sh bench with $W (g0, or gC where PART 1 and the A/B say so).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w
for f in .gl/*.xz; do b=$(basename $f .xz); [ -x /tmp/w/$b ] || { xz -dc $f > /tmp/w/$b && chmod +x /tmp/w/$b; }; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
g() { [ $(( $(date +%s) - T0 )) -lt ${MAXS:-540} ] || { echo "=== out of time $(t)"; exit 0; }; }
run() { g; local b=$1; shift; echo "=== $b $* $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|batch +[0-9]+:|prefill [0-9]+:|error|rror" | head -5; }
if [ "${PART}" = 1 ]; then
  (timeout 585 bash tools/bench/vs-llamacpp.sh build > /tmp/peer-build.log 2>&1; echo "=== peer build rc $? $(t)") &
  for b in g0 gC; do
    g; echo "=== $b parity (every case) $(t)"; timeout 200 /tmp/w/$b parity --device wgpu:nvidia 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -8
    g; echo "=== $b gate $(t)"; timeout 100 /tmp/w/$b gate --device wgpu:nvidia 2>&1 | grep -E "FAIL|fail|passed" | cut -c1-160 | tail -6
  done
  # the greedy anchors an H100 (or H200) has never had: recorded after their oracle checks pass,
  # brought back to commit under tests/anchors/
  g; echo "=== g0 gate --bless $(t)"; timeout 100 /tmp/w/g0 gate --device wgpu:nvidia --bless 2>&1 | grep -E "FAIL|bless|anchor|passed" | cut -c1-160 | tail -6
  for f in $(find tests/anchors -name '*.json' -newermt "@$T0"); do cp $f $OUT/$(echo $f | tr / _); done
  echo "=== waiting for the build $(t)"; wait
  grep -E "STEP|rc|error" /tmp/peer-build.log | tail -20; cp /tmp/peer-build.log $OUT/ 2>/dev/null
fi
if [ "${PART}" = 2 ]; then
  for rep in 1 2; do for b in g0 gC; do run $b --shape qwen3-0.6b --decode 8 --prefill 512,2048; done; done
  for b in g0 gC; do run $b --shape qwen3-0.6b --quant q4_k --decode 8 --prefill 2048; done
  run g0 --shape qwen3.5-0.8b --decode 128 --prefill 2048
  g; echo "=== vs-llamacpp bench with $W $(t)"
  WGLLM=/tmp/w/$W OUT=$OUT/vs timeout $(( 590 - $(date +%s) + T0 )) bash tools/bench/vs-llamacpp.sh bench 2>&1 | tail -60
  rm -rf $OUT/vs
fi
echo "=== done $(t)"
