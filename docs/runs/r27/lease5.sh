#!/usr/bin/env bash
# r27 lease 5 (H200): paged attention and the gated delta rule's kernels without wgpu's runtime
# checks (tuning.rs UNCHECKED), against 2dc0c45, alternated; their parity cases on wgpu and cuda;
# wgllm.xz: 2dc0c45; wgllm-new.xz: 298baec.
# the model gate's tiny case.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
cd /tmp/w
for b in wgllm wgllm-new ops; do xz -dc $R/.gl/$b.xz > $b && chmod +x $b; done
./wgllm bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch"
for rep in 1 2; do
  for b in wgllm wgllm-new; do
    for s in qwen3.5-0.8b qwen3-0.6b; do
      echo "=== $b $s rep $rep"
      ./$b bench --device wgpu:nvidia --shape $s --decode 128 --prefill 512,2048 2>&1 | grep -E "decode batch|prefill"
    done
  done
done
cd $R
echo "=== parity gdn, paged (wgpu, cuda)"
timeout 150 /tmp/w/ops gdn 2>&1 | tail -2
timeout 150 /tmp/w/ops paged_ 2>&1 | tail -2
echo "=== gate tiny"
timeout 100 /tmp/w/wgllm-new gate --case tiny 2>&1 | tail -2
