#!/usr/bin/env bash
# r55 call 1, from the repository root with carry [".gl"] (.gl: the loader .debs, g0.xz = main
# 1c5a313 built here, ablq.tar.xz = docs/runs/r54/mkabl_q.py's copies plus `single`, shaders/
# with paged_attention_lone.wgsl's `let single = nv == 1u;` made `true`: no combine across
# workgroups, wrong numbers past one partition, timing only).
# 1. r54's readied q4_k ablation (docs/runs/r54/ablate_q.sh). 2. what the lone attention's
# combine costs a step in wall time: g0 against g0@single, two rounds alternated, bf16 and q4_k.
# 3. a bf16 profile of g0.
set -u
bash docs/runs/r54/ablate_q.sh
BINS="g0 g0@/tmp/ablq/single" tools/bench/ab.sh 2 \
  "--shape qwen3-0.6b --decode 128 --prefill 16" \
  "--shape qwen3-0.6b --quant q4_k --decode 128 --prefill 16" 2>&1 | grep -E "^===|decode"
BINS="g0" tools/bench/ab.sh 1 "--shape qwen3-0.6b --decode 128 --prefill 16 --profile" 2>&1 | tail -40
