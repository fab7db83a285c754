#!/usr/bin/env bash
# r31 lease 3 (H200), carry [".gl"]. Where gdn_batch_norm's time goes: gn (lease 2's binary) run on
# copies of shaders/ whose gdn_batch_norm.wgsl `tile_out` is cut down (WGLLM_SHADER_DIR):
#   v1 the plain store (no hand-over, no norm)   v2 the hand-over without the norm
#   v3 v1 times w * silu(z) (the epilogue's loads)   v4 v1 with a wg_sum tree a token
# (.gl/x/vN: copies of shaders/ at 0b78f99, each with that one function replaced as said; not kept).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gb gn; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
one() { echo "=== $1 rep $2: $(env $3 /tmp/w/$4 bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"; }
for rep in 1 2; do
  one gb $rep "" gb
  one gn $rep "" gn
  for v in v1 v2 v3 v4; do one $v $rep WGLLM_SHADER_DIR=.gl/x/$v gn; done
done
