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
for f in .gl/*.xz; do b=$(basename $f .xz); xz -dc $f > /tmp/w/$b && chmod +x /tmp/w/$b; done
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
elif [ "${PART}" = 12 ]; then
  # r45: where the lone decode attention and the paged prefill attention spend their time: main's
  # binary (gR) with shader copies (.gl/sd/*) that cut each kernel short or drop a phase
  for v in D0 D1 D2 D3 D0 D1 D2 D3; do
    sd=""; [ $v != D0 ] && sd=$R/.gl/sd/$v
    echo "=== $v decode $(t)"; WGLLM_SHADER_DIR=$sd timeout 120 /tmp/w/gR bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch|dispatches|error" | head -3
  done
  echo "=== D0 decode ctx 2064 $(t)"; timeout 120 /tmp/w/gR bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 --prefill 2048 2>&1 | grep -E "decode batch|error" | head -3
  for v in P0 P1 P2 P3 P4 P5 P0; do
    sd=""; [ $v != P0 ] && sd=$R/.gl/sd/$v
    echo "=== $v prefill $(t)"; WGLLM_SHADER_DIR=$sd timeout 120 /tmp/w/gR bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | grep -E "prefill 2048|attention_prefill |error" | head -4
  done
  echo "=== D0 decode profile $(t)"; timeout 120 /tmp/w/gR bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 --profile 2>&1 | tee ${OUT:-/tmp}/D0-decode-profile.log | grep -A6 "decode step: wall"
elif [ "${PART}" = 13 ]; then
  # r45: A = gR (main), B = gR + .gl/sd/NEW (one pool-table lookup a staged block), C = gU (the
  # split score) + .gl/sd/HEAD (main's shaders), D = gU (both)
  pv() { case $1 in A) echo "gR ";; B) echo "gR $R/.gl/sd/NEW";; C) echo "gU $R/.gl/sd/HEAD";; D) echo "gU ";; esac; }
  echo "=== gU parity attention $(t)"; timeout 200 /tmp/w/gU parity --device wgpu:nvidia --filter "attention[" 2>&1 | grep -E "FAIL|passed" | tail -4
  for v in ${VARS:-A B C D D C B A}; do
    set -- $(pv $v); b=$1; sd=${2:-}
    echo "=== $v $b $sd $(t)"
    if [ -n "$sd" ]; then export WGLLM_SHADER_DIR=$sd; else unset WGLLM_SHADER_DIR; fi
    timeout 120 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 512,2048 --profile 2>&1 | grep -E "prefill (512|2048)|attention_prefill |error" | head -6
  done
  unset WGLLM_SHADER_DIR
  for b in gR gU gR gU; do echo "=== $b depth 4096 $(t)"; timeout 150 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 64,256 --depth 4096 2>&1 | grep -E "prefill|error" | head -4; done
elif [ "${PART}" = 14 ]; then
  # r45: the attention tile sweep with the split score (sweepU) and without (TMP_SPLIT_OFF: the
  # keys-across score of main); then main's decode at the D series' context (ctx 192)
  for m in off on; do
    if [ $m = off ]; then export TMP_SPLIT_OFF=1; else unset TMP_SPLIT_OFF; fi
    echo "=== attention sweep split $m $(t)"; WGLLM_BENCH_DEVICE=nvidia timeout 230 /tmp/w/sweepU attention_sweep --ignored --nocapture 2>&1 | tee ${OUT:-/tmp}/attention-sweep-split-$m.log | grep -vE "^  check " | head -70
  done
  unset TMP_SPLIT_OFF
  for i in 1 2; do echo "=== gR decode ctx 192 $(t)"; timeout 120 /tmp/w/gR bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch|error" | head -3; done
elif [ "${PART}" = 15 ]; then
  # r45: gV = the tree (split score on SPLIT_TILES, one pool-table lookup a staged block) against
  # B = gR + .gl/sd/NEW (the lookup alone: main's generator)
  echo "=== gV parity attention $(t)"; timeout 200 /tmp/w/gV parity --device wgpu:nvidia --filter "attention[" 2>&1 | grep -E "FAIL|passed" | tail -4
  bb() { local v=$1; shift; if [ $v = B ]; then WGLLM_SHADER_DIR=$R/.gl/sd/NEW timeout 150 /tmp/w/gR "$@"; else timeout 150 /tmp/w/gV "$@"; fi; }
  for v in B V B V; do echo "=== $v $(t)"; bb $v bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 512,2048 --profile 2>&1 | grep -E "prefill (512|2048)|attention_prefill |error" | head -8; done
  for v in B V B V; do echo "=== $v depth 4096 $(t)"; bb $v bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 64,256 --depth 4096 2>&1 | grep -E "prefill|error" | head -4; done
  for v in B V; do echo "=== $v q4_k $(t)"; bb $v bench --device wgpu:nvidia --shape qwen3-0.6b --quant q4_k --decode 8 --prefill 2048 2>&1 | grep -E "prefill|error" | head -3; done
  for v in B V; do echo "=== $v qwen3.5 $(t)"; bb $v bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 8 --prefill 2048 2>&1 | grep -E "prefill|error" | head -3; done
elif [ "${PART}" = 16 ]; then
  # r45: the lone decode attention's serial workgroup-memory sums (q/k norm, the chunk max, the
  # denominators) as four side by side: gV against gV + .gl/sd/ILP
  dd() { local v=$1; shift; if [ $v = I ]; then WGLLM_SHADER_DIR=$R/.gl/sd/ILP timeout 150 /tmp/w/gV "$@"; else timeout 150 /tmp/w/gV "$@"; fi; }
  for f in paged rms_norm_rope_kv_attention; do echo "=== I parity $f $(t)"; WGLLM_SHADER_DIR=$R/.gl/sd/ILP timeout 150 /tmp/w/gV parity --device wgpu:nvidia --filter "$f" 2>&1 | grep -E "FAIL|passed" | tail -4; done
  for v in V I V I V I; do echo "=== $v decode $(t)"; dd $v bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch|error" | head -2; done
  for v in V I V I; do echo "=== $v qwen3.5 decode $(t)"; dd $v bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E "decode batch|error" | head -2; done
  echo "=== I decode profile $(t)"; dd I bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 --profile 2>&1 | tee ${OUT:-/tmp}/I-decode-profile.log | grep -A3 "decode step: wall"
elif [ "${PART}" = 17 ]; then
  # r45: issue 19's rows on an H200 if one comes: gR (r44's main) and gV (r45: the split score,
  # one pool lookup a staged block), alternated
  for b in gR gV gR gV; do run $b --shape qwen3-0.6b --decode 128 --prefill 512,2048; done
  for b in gR gV; do run $b --shape qwen3-0.6b --quant q4_k --decode 128 --prefill 2048; done
  for b in gR gV; do run $b --shape qwen3.5-0.8b --decode 128 --prefill 2048; done
  echo "=== gV batch 64 $(t)"; timeout 120 /tmp/w/gV bench --device wgpu:nvidia --shape qwen3-0.6b --batch 64 --prompt-len 128 --gen-len 128 --kv-dtype f16 2>&1 | grep -E "batch +[0-9]+:|error" | head -2
elif [ "${PART}" = 18 ]; then
  # r45: where gV's paged prefill attention (the split score) spends its time: shader copies that
  # drop the score (P1), P.V (P2), the staging's global loads (P4), both products (P5)
  for v in P0 P1 P2 P4 P5 P0; do
    echo "=== $v prefill $(t)"
    if [ $v = P0 ]; then unset WGLLM_SHADER_DIR; else export WGLLM_SHADER_DIR=$R/.gl/sd/$v; fi
    timeout 100 /tmp/w/gV bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 2048 --profile 2>&1 | grep -E "prefill 2048|attention_prefill |error" | head -4
  done
  unset WGLLM_SHADER_DIR
fi
echo "=== done $(t)"
