#!/usr/bin/env bash
# r31 lease 5 (H200), carry [".gl"]. Lease 4 showed gdn_batch alone (no norm) at 714.6 tok/s and
# the fused module slow for a reason outside its epilogue: it was built with naga's runtime checks
# (tuning.rs UNCHECKED named gdn_batch, not gdn_batch_norm). gh: gdn_batch_norm (hand-over)
# without checks (3585860). gw: gh plus an experiment switch (not
# committed): WGLLM_X=gdn gdn_batch alone (no norm: timing only); WGLLM_X=w one workgroup a head
# (TJ = dv, WGLLM_XNT threads: 256, 512, 1024 = 2, 4, 8 lanes a column; the first design's kernel,
# 8930bbb's gdn_batch_norm.wgsl, in .gl/x/w), unchecked. Then gh's profile, as-run, parity, gate.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gb gh gw gops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
one() { echo "=== $1 rep $2: $(env $3 /tmp/w/$4 bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"; }
for rep in 1 2; do
  one gb $rep "" gb
  one gh $rep "" gh
  one gdn $rep WGLLM_X=gdn gw
  for nt in 256 512 1024; do one w$nt $rep "WGLLM_X=w WGLLM_XNT=$nt WGLLM_SHADER_DIR=.gl/x/w" gw; done
done
for b in gb gh; do
  echo "=== $b qwen3.5-0.8b as-run 512: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'batch +1:' | head -1)"
done
echo "=== gh qwen3.5-0.8b profile"
/tmp/w/gh bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 64 --profile 2>&1 | sed -n '/CPU time/p;/decode step: wall/,/unprofiled/p' | head -14
echo "=== parity gdn_batch (wgpu, cuda)"
timeout 200 /tmp/w/gops gdn_batch 2>&1 | grep -E "passed|FAIL" | tail -6
echo "=== gate tiny (gh)"
timeout 60 /tmp/w/gh gate --case tiny 2>&1 | tail -1
