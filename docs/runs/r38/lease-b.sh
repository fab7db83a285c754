#!/usr/bin/env bash
# r37 lease b (H200), carry [".gl"] (drop ga/grops/grserve/gnops first if the carry nears 64 MiB).
# gr.xz = r35 main (c45870c); gq.xz / gqops.xz = r37 main (244b280: add_rms_norm_linear with a
# quantized weight, a q4_k decode step 230 -> 147 dispatches); gn.xz = r36's tensor-core prefill
# attention form 2 (cebfc5d + patch).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gr gq gqops gn; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
echo "=== gq ops add_rms_norm_linear $(t)"; timeout 150 /tmp/w/gqops add_rms_norm_linear --skip ::hip 2>&1 | grep -E "FAIL|panicked|^[0-9]+ passed" | head -12
echo "=== gq gate tiny $(t)"; timeout 60 /tmp/w/gq gate --case tiny --device wgpu:nvidia 2>&1 | grep -iE "fail|passed" | head -6
for b in gr gq gr gq; do
  echo "=== $b q4_k decode $(t)"; timeout 45 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --quant q4_k --decode 128 2>&1 | grep -E "decode batch|dispatches"
done
for b in gr gq; do
  echo "=== $b q8_0 decode $(t)"; timeout 45 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --quant q8_0 --decode 128 2>&1 | grep -E "decode batch|dispatches"
done
echo "=== gq q4_k decode profile $(t)"; timeout 60 /tmp/w/gq bench --device wgpu:nvidia --shape qwen3-0.6b --quant q4_k --decode 64 --profile 2>&1 | grep -A14 "decode step:" | head -16
for b in gr gn gr gn; do
  echo "=== $b bf16 prefill $(t)"; timeout 45 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 512,2048 2>&1 | grep -E "prefill [0-9]+:"
done
echo "=== done $(t)"
