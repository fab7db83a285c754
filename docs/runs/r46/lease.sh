#!/usr/bin/env bash
# r46's lease script, run from the repository root with carry [".gl"] (git-ignored: the loader
# .debs, xz'd binaries built here with `cargo build --release --features hip,cuda --bin wgllm`, and
# for PART 2 the shader copy .gl/sdL): gW = a239199 (r45's main), gX = gW + the prefill attention
# on cooperative matrices (coop-attention.patch's first commit), gY = gX + its second (loops of a
# constant count), gZ = 4194b6d (gW + the paged prefill's f32 pools read a vec4 a load). PART 1 ran
# (call1-part1.log); PART 2 (sdL: gY's shaders with each softmax row on one lane) and PART 3 got
# no machine; PART 4, PART 3 cut to the device time left, ran (call2-part4.log).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w
for f in .gl/*.xz; do b=$(basename $f .xz); xz -dc $f > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
run() { local b=$1; shift; echo "=== $b $* $(t)"; timeout 120 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|prefill [0-9]+:|batch +[0-9]+:|error|rror" | head -4; }
if [ "${PART}" = 1 ]; then
  # gY = gX with the staging and softmax loops of a constant count
  for b in gY gX; do echo "=== $b parity attention $(t)"; timeout 200 /tmp/w/$b parity --device wgpu:nvidia --filter "attention[" > ${OUT:-/tmp}/$b-parity-attention.log 2>&1; tail -1 ${OUT:-/tmp}/$b-parity-attention.log; grep -v " pass " ${OUT:-/tmp}/$b-parity-attention.log | cut -c1-400 | head -8; done
  /tmp/w/gY devices | grep -E "cooperative|attention"
  for P in "--prefill 2048" "--prefill 512"; do for b in gW gX gY gW gX gY; do run $b --shape qwen3-0.6b --decode 8 $P; done; done
  echo "=== gY profile 2048 $(t)"; timeout 120 /tmp/w/gY bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | tee ${OUT:-/tmp}/gY-profile.log | grep -A14 "prefill 2048: wall"
  for b in gW gY; do run $b --shape qwen3-0.6b --quant q4_k --decode 8 --prefill 2048; done
  for b in gW gY; do echo "=== $b depth 4096 $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 64,256 --depth 4096 2>&1 | grep -E "prefill|error" | head -4; done
fi
if [ "${PART}" = 3 ]; then
  # gZ = gW + paged_attention_prefill's f32 pools read a vec4 a load (read4 bindings)
  echo "=== gZ parity paged $(t)"; timeout 100 /tmp/w/gZ parity --device wgpu:nvidia --filter "paged_attention[" 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -4
  for P in "--prefill 2048" "--prefill 512"; do for b in gW gZ gW gZ gW gZ; do run $b --shape qwen3-0.6b --decode 8 $P; done; done
  for b in gW gZ; do echo "=== $b depth 4096 $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 64,256 --depth 4096 2>&1 | grep -E "prefill|error" | head -4; done
  echo "=== gZ profile 2048 $(t)"; timeout 120 /tmp/w/gZ bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | tee ${OUT:-/tmp}/gZ-profile.log | grep -A4 "prefill 2048: wall"
  PART=2
fi
if [ "${PART}" = 2 ]; then
  for v in "" sdL; do
    sd=""; [ -n "$v" ] && sd=$R/.gl/$v
    echo "=== gY ${v:-as is} parity $(t)"; env ${sd:+WGLLM_SHADER_DIR=$sd} timeout 120 /tmp/w/gY parity --device wgpu:nvidia --filter "attention[f32" 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -4
  done
fi
if [ "${PART}" = 4 ]; then
  # PART 3 cut to the device time left: gZ's paged parity, gW / gZ alternated
  echo "=== gZ parity paged $(t)"; timeout 60 /tmp/w/gZ parity --device wgpu:nvidia --filter "paged_attention[kvf32" 2>&1 | grep -E "FAIL|passed" | cut -c1-220 | tail -4
  for P in "--prefill 2048" "--prefill 512"; do for b in gW gZ gW gZ; do run $b --shape qwen3-0.6b --decode 8 $P; done; done
fi
