#!/usr/bin/env bash
# r43's lease script, run from the repository root with carry [".gl"] (git-ignored: the loader
# .debs and xz'd binaries built here, `cargo build --release --features hip,cuda --bin wgllm`,
# the lib test binary from `cargo test --release --features hip,cuda --lib --no-run`):
# gF = 873a05e (r41's main), gG = c81d3a5 (r42: the paged prefill's key partitions),
# gI = 44a83f4 (r42's two changes reverted), sweepG = its lib test binary (the attention sweep
# with a short chunk after a long cached prefix), gJ = 4aa737a (the wide coop GEMM tile and the
# attention partitions' grid rule; main's kernels at the end of r43).
# PART=3 ran first (r42's prepared call: lease1-part3.log), then PART=4 (lease2-part4.log).
# PART=5 (gI against gJ, prefill 2048 and 512 alternated) is the next call: no machine was left.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gF gG gI gJ sweepG; do [ -f .gl/$b.xz ] && xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
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
fi
echo "=== done $(t)"
