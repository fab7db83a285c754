#!/usr/bin/env bash
# The lease script of r43 and r44, run from the repository root with carry [".gl"] (git-ignored:
# the loader .debs and xz'd binaries built here, `cargo build --release --features hip,cuda --bin
# wgllm`, and the lib test binary from `cargo test --release --features hip,cuda --lib --no-run`).
# r43: gF = 873a05e (r41's main), gG = c81d3a5 (r42: the paged prefill's key partitions), gI =
# 44a83f4 (r42's two changes reverted), sweepG = its lib test binary, gJ = 4aa737a (the wide coop
# GEMM tile); PART=3 and PART=4 ran in r43 (docs/runs/r43/), PART=5 never did (PART=6 replaced it).
# r44: gK = 8023fff (r43's main), gL = 121d4d2 (linear_coop's vec4<f16> staging), gM = ea88de1 (the
# paged prefill's key partitions), gP = 167b0d8 (COOP_GEMM's K split; bench's three prefill runs),
# gQ = d1fa5e4 (the paged prefill's rows with PBS), gR = 82cbb2f (every paged kernel's rows with
# PBS: main's kernels); PART=6 .. PART=11 ran in that order, one call each (docs/runs/r44/callN).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gF gG gI gJ gK gL gM gP gQ gR sweepG; do [ -f .gl/$b.xz ] && xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
run() { local b=$1; shift; echo "=== $b $* $(t)"; timeout 120 /tmp/w/$b bench --device wgpu:nvidia "$@" 2>&1 | grep -E "decode batch|prefill [0-9]+:|batch +[0-9]+:|error" | head -4; }
if [ "${PART:-4}" = 4 ]; then
  Q="--shape qwen3-0.6b --quant q4_k --decode 128 --prefill 8"
  P="--shape qwen3-0.6b --decode 128 --prefill 2048"
  # (gI's shaders and kernels are gF's byte for byte: `git diff 873a05e` touches attention_sweep.rs
  # alone, so no bench A/B; the device time goes to the sweeps)
  echo "=== attention sweep $(t)"; WGLLM_BENCH_DEVICE=nvidia timeout 150 /tmp/w/sweepG attention_sweep --ignored --nocapture 2>&1 | tee ${OUT:-/tmp}/attention-sweep.log | grep -E "FAIL|^T|TILES|p[0-9]+sg|failed" | head -60
  echo "=== coop sweep $(t)"; WGLLM_BENCH_DEVICE=nvidia WGLLM_LINEAR_SWEEP=coop timeout 300 /tmp/w/sweepG linear::sweep::sweep --ignored --nocapture > ${OUT:-/tmp}/coop-sweep.log 2>&1; echo "rc $?"; grep -E "^M(2048|256) |FAIL|failed|sweep done" -A6 ${OUT:-/tmp}/coop-sweep.log | head -80
elif [ "${PART}" = 5 ]; then
  # gJ = gI + the wide coop GEMM tile where its workgroups fill the GPU (linear/mod.rs)
  for P in "--prefill 2048" "--prefill 512"; do for b in gI gJ gI gJ; do run $b --shape qwen3-0.6b --decode 8 $P; done; done
elif [ "${PART}" = 6 ]; then
  # r44: gK = 8023fff (main: the wide coop tile, the attention grid rule, bench --depth) against gI
  for P in "--prefill 2048" "--prefill 512"; do for b in gI gK gI gK; do run $b --shape qwen3-0.6b --decode 8 $P; done; done
  echo "=== gK profile prefill 2048 $(t)"; timeout 120 /tmp/w/gK bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | tee ${OUT:-/tmp}/gK-profile.log | grep -E "prefill|linear|attention|total|dispatch" | head -40
  echo "=== gK depth 4096 $(t)"; timeout 150 /tmp/w/gK bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 64,256,2048 --depth 4096 2>&1 | tee ${OUT:-/tmp}/gK-depth.log | grep -E "prefill|error" | head
elif [ "${PART}" = 7 ]; then
  # r44: gL = gK + the coop linear's staging in vec4<f16> stores (was one f16 a store);
  # gM = gL + the paged prefill's key partitions counted from the block table's length
  echo "=== gM parity linear + paged $(t)"; timeout 240 /tmp/w/gM parity --device wgpu:nvidia --filter "linear" 2>&1 | tail -2; timeout 200 /tmp/w/gM parity --device wgpu:nvidia --filter "paged_attention[" 2>&1 | grep -E "FAIL|passed" | tail -5
  for P in "--prefill 2048" "--prefill 512"; do for b in gK gL gK gL; do run $b --shape qwen3-0.6b --decode 8 $P; done; done
  for b in gK gL; do run $b --shape qwen3-0.6b --quant q4_k --decode 8 --prefill 2048; done
  echo "=== gL profile prefill 2048 $(t)"; timeout 120 /tmp/w/gL bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | tee ${OUT:-/tmp}/gL-profile.log | grep -E "prefill|linear_coop" | head -12
  for b in gK gM gK gM; do echo "=== $b depth 4096 $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 64,256,1024 --depth 4096 2>&1 | grep -E "prefill|error" | head -4; done
  echo "=== gM depth profile $(t)"; timeout 120 /tmp/w/gM bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 256 --depth 4096 --profile 2>&1 | tee ${OUT:-/tmp}/gM-depth-profile.log | grep -E "prefill|attention" | head -8
elif [ "${PART}" = 8 ]; then
  # r44: gP = gM + COOP_GEMM's K split across workgroups where its tiles are fewer than 128, and
  # bench's prefill the mean of 3 runs (its --profile after the --depth fill alone)
  echo "=== gP parity linear $(t)"; timeout 240 /tmp/w/gP parity --device wgpu:nvidia --filter "linear" 2>&1 | tail -1
  for b in gM gP gM gP; do echo "=== $b $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 64,256,512,2048 2>&1 | grep -E "prefill|error" | head -4; done
  for b in gM gP; do echo "=== $b depth 4096 $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 64,256 --depth 4096 2>&1 | grep -E "prefill|error" | head -4; done
  echo "=== gP depth profile $(t)"; timeout 120 /tmp/w/gP bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 256 --depth 4096 --profile 2>&1 | tee ${OUT:-/tmp}/gP-depth-profile.log | grep -A14 "prefill 256 at depth 4096: wall"
  echo "=== gP profile 512 $(t)"; timeout 120 /tmp/w/gP bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 512 --profile 2>&1 | tee ${OUT:-/tmp}/gP-512-profile.log | grep -A10 "prefill 512: wall"
elif [ "${PART}" = 9 ]; then
  # r44: gQ = gP + the paged prefill's key rows looked up with the block size a constant
  echo "=== gQ parity paged $(t)"; timeout 100 /tmp/w/gQ parity --device wgpu:nvidia --filter "paged_" 2>&1 | grep -E "FAIL|passed" | tail -3
  for b in gP gQ gP gQ; do echo "=== $b $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 512,2048 2>&1 | grep -E "prefill|error" | head -4; done
  for b in gP gQ; do echo "=== $b depth 4096 $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 64,256 --depth 4096 2>&1 | grep -E "prefill|error" | head -4; done
  echo "=== gQ profile 2048 $(t)"; timeout 120 /tmp/w/gQ bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | tee ${OUT:-/tmp}/gQ-2048-profile.log | grep -A5 "prefill 2048: wall"
elif [ "${PART}" = 10 ]; then
  # r44: gR = gQ + every paged kernel's pool rows with the block size a constant (paged_pool.wgsl)
  echo "=== gR parity paged $(t)"; timeout 100 /tmp/w/gR parity --device wgpu:nvidia --filter "paged" 2>&1 | grep -E "FAIL|passed" | tail -3
  for b in gQ gR gQ gR; do run $b --shape qwen3-0.6b --decode 128 --prefill 2048; done
  for b in gQ gR; do run $b --shape qwen3.5-0.8b --decode 128 --prefill 8; done
  for b in gQ gR; do echo "=== $b batch 64 $(t)"; timeout 120 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --batch 64 --prompt-len 128 --gen-len 128 --kv-dtype f16 2>&1 | grep -E "batch +[0-9]+:|error" | head -2; done
elif [ "${PART}" = 11 ]; then
  # r44: main's kernels (gR) on an H200 if one comes: the rows of issue 19
  run gR --shape qwen3-0.6b --decode 128 --prefill 512,2048
  run gR --shape qwen3-0.6b --quant q4_k --decode 128 --prefill 2048
  run gR --shape qwen3.5-0.8b --decode 128 --prefill 2048
  echo "=== gR depth 4096 $(t)"; timeout 150 /tmp/w/gR bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 64,256 --depth 4096 2>&1 | grep -E "prefill|error" | head -4
fi
echo "=== done $(t)"
