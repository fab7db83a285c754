#!/usr/bin/env bash
# r55 call E, readied (no device time was left to run it): main against the residual added in the
# o and down projections' epilogues and the next projection's norm reading one row, alternated; then
# gE's parity of the three fused ops on the GPU. From the repository root with carry [".gl"]: .gl
# holds the loader .debs, g0.xz (main: `cargo build --release --bin wgllm`, `xz -T2 -c
# target/release/wgllm > .gl/g0.xz`) and gE.xz (the same from branch exp/r55-linear-add, e.g. in a
# `git worktree add /work/exp exp/r55-linear-add` with its own CARGO_TARGET_DIR). Where .gl also
# holds shE.tar.xz, the branch's shaders with the lone attention's combine cut (timing only:
# `mkdir -p /tmp/shE && git archive exp/r55-linear-add shaders | tar x -C /tmp/shE && sed -i
# 's/let single = nv == 1u;/let single = true;/' /tmp/shE/shaders/paged_attention_lone.wgsl &&
# tar cJf .gl/shE.tar.xz -C /tmp/shE shaders`), gE@ those runs too: the ceiling of both changes.
set -u
BINS="g0 gE"
if [ -f .gl/shE.tar.xz ]; then
  mkdir -p /tmp/shE && tar xJf .gl/shE.tar.xz -C /tmp/shE && BINS="$BINS gE@/tmp/shE/shaders"
fi
BINS="$BINS" timeout 240 tools/bench/ab.sh 2 \
  "--shape qwen3-0.6b --decode 128 --prefill 16" \
  "--shape qwen3-0.6b --quant q4_k --decode 128 --prefill 16" 2>&1 | grep -E "^===|decode batch|rror"
mkdir -p /tmp/w; xz -dc .gl/gE.xz > /tmp/w/gE; chmod +x /tmp/w/gE
for f in linear_add rms_norm_linear add_rms_norm_linear; do
  timeout 60 /tmp/w/gE parity --device wgpu:nvidia --filter $f 2>&1 | grep -E "FAIL|passed" | head -5
done
