#!/usr/bin/env bash
# Readied in r54 for the next lease (not run: no device time left). Where a lone q4_k decode
# step's quantized matvecs spend their time (the profile's qmatvec row: q/k/v with the add + norm,
# gate/up with it and the swiglu, the LM head; qmatvec_xs: o and down): main (g0) alone, then
# g0@copy for each shader copy of mkabl_q.py (its header says each). From the repository root with
# carry [".gl"]: .gl holds the loader .debs, g0.xz (main: `cargo build --release --bin wgllm`,
# xz'd) and ablq.tar.xz (`python3 docs/runs/r54/mkabl_q.py; tar cJf .gl/ablq.tar.xz -C /tmp ablq`).
# Checked on lavapipe at r54 (`parity --filter q4_k`, WGLLM_SHADER_DIR=each copy): v0 44 / 0, every
# cut one red (empty 7 / 37, nonorm 29 / 15, nox 16 / 28, now 16 / 28, noreduce 7 / 37, xsempty
# 41 / 3), so each cut changes what runs.
set -u
tar xJf .gl/ablq.tar.xz -C /tmp
nvidia-smi -L
v() { for x in "$@"; do printf 'g0@/tmp/ablq/%s ' "$x"; done; }
BINS="g0 $(v v0 empty nonorm nox now noreduce xsempty)" \
  tools/bench/ab.sh 1 "--shape qwen3-0.6b --quant q4_k --decode 128 --prefill 16 --profile" 2>&1 |
  grep -E "^===|decode batch|qmatvec|paged_attention_lone|decode step"
