#!/usr/bin/env bash
# r31 lease 4 (H200), carry [".gl"]. Why lease 3's v1 (gdn_batch_norm's module with the plain
# store: gdn_batch's math, no norm) ran slower than gb's gdn_batch + rms_norm_gated. gx: gn with
# an experiment switch (not committed): WGLLM_X=comp records the composition (gdn_batch into a
# scratch, rms_norm_gated), =gdn gdn_batch alone (no norm: wrong output, timing only), =fused10
# the fused module without the two atomic bindings (with .gl/x/v1's plain store).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gb gx; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
one() { echo "=== $1 rep $2: $(env $3 /tmp/w/$4 bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"; }
for rep in 1 2; do
  one gb $rep "" gb
  one comp $rep WGLLM_X=comp gx
  one gdn $rep WGLLM_X=gdn gx
  one fused10-v1 $rep "WGLLM_X=fused10 WGLLM_SHADER_DIR=.gl/x/v1" gx
  one v1 $rep WGLLM_SHADER_DIR=.gl/x/v1 gx
done
echo "=== gx comp profile"
WGLLM_X=comp /tmp/w/gx bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 64 --profile 2>&1 | sed -n '/decode step: wall/,/unprofiled/p' | head -12
