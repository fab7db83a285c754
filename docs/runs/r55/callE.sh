#!/usr/bin/env bash
# r55 call E, readied (no device time was left to run it): main against the residual added in the
# o and down projections' epilogues and the next projection's norm reading one row, alternated; then
# gE's parity of the three fused ops on the GPU. From the repository root with carry [".gl"]: .gl
# holds the loader .debs, g0.xz (main: `cargo build --release --bin wgllm`, `xz -T2 -c
# target/release/wgllm > .gl/g0.xz`) and gE.xz (the same from branch exp/r55-linear-add, e.g. in a
# `git worktree add /work/exp exp/r55-linear-add` with its own CARGO_TARGET_DIR).
set -u
BINS="g0 gE" timeout 150 tools/bench/ab.sh 2 \
  "--shape qwen3-0.6b --decode 128 --prefill 16" \
  "--shape qwen3-0.6b --quant q4_k --decode 128 --prefill 16" 2>&1 | grep -E "^===|decode batch|rror"
mkdir -p /tmp/w; xz -dc .gl/gE.xz > /tmp/w/gE; chmod +x /tmp/w/gE
for f in linear_add rms_norm_linear add_rms_norm_linear; do
  timeout 60 /tmp/w/gE parity --device wgpu:nvidia --filter $f 2>&1 | grep -E "FAIL|passed" | head -5
done
