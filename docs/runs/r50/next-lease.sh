#!/usr/bin/env bash
# The next lease's script (written at the end of r50, not yet run), from the repository root with
# carry [".gl", ".peer"]: .gl the loader .debs and ONE xz'd binary, g0 = main (4e4ebba or later,
# `cargo build --release --features hip,cuda --bin wgllm`; the tree, .gl and the 42 MiB kit
# together must stay under the device tool's 64 MiB: a second binary does not fit), .peer the
# llamacpp-peer kit (make-kit.sh .peer). Meant for an H200 (the machine issue 19's bars name):
# PART 1 builds llama.cpp in the background while g0's parity and gates run and its decode
# steps are profiled (where the bf16 and q4_k steps spend their time at 144 keys); PART 2 on the
# same warm machine right after: every issue-19 row, then vs-llamacpp.sh bench.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w
for f in .gl/*.xz; do b=$(basename $f .xz); [ -x /tmp/w/$b ] || { xz -dc $f > /tmp/w/$b && chmod +x /tmp/w/$b; }; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
g() { [ $(( $(date +%s) - T0 )) -lt ${MAXS:-540} ] || { echo "=== out of time $(t)"; exit 0; }; }
run() { g; local b=$1; shift; echo "=== $b $* $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|batch +[0-9]+:|prefill [0-9]+:|dispatches|error|rror" | head -6; }
if [ "${PART}" = 1 ]; then
  (timeout 585 bash tools/bench/vs-llamacpp.sh build > /tmp/peer-build.log 2>&1; echo "=== peer build rc $? $(t)") &
  g; echo "=== g0 parity (every case) $(t)"; timeout 220 /tmp/w/g0 parity --device wgpu:nvidia 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -8
  # an H200 has anchors (cuda-nvidia-h200 for the native backend; wgpu's where none: bless them)
  g; echo "=== g0 gate --bless $(t)"; timeout 100 /tmp/w/g0 gate --device wgpu:nvidia --bless 2>&1 | grep -E "FAIL|bless|anchor|passed" | cut -c1-160 | tail -6
  for f in $(find tests/anchors -name '*.json' -newermt "@$T0"); do cp $f $OUT/$(echo $f | tr / _); done
  for q in "" "--quant q4_k"; do
    g; echo "=== g0 decode profile $q $(t)"; timeout 100 /tmp/w/g0 bench --device wgpu:nvidia --shape qwen3-0.6b $q --decode 128 --profile 2>&1 | grep -B1 -A12 "decode step: wall" | tee -a $OUT/decode-profiles.log | head -16
  done
  echo "=== waiting for the build $(t)"; wait
  grep -E "STEP|rc|error" /tmp/peer-build.log | tail -20; cp /tmp/peer-build.log $OUT/ 2>/dev/null
fi
if [ "${PART}" = 2 ]; then
  run g0 --shape qwen3-0.6b --quant q4_k --decode 128 --prefill 2048
  run g0 --shape qwen3.5-0.8b --decode 128 --prefill 2048
  g; echo "=== vs-llamacpp bench with g0 $(t)"
  WGLLM=/tmp/w/g0 OUT=$OUT/vs timeout $(( 590 - $(date +%s) + T0 )) bash tools/bench/vs-llamacpp.sh bench 2>&1 | tail -60
  rm -rf $OUT/vs
fi
echo "=== done $(t)"
