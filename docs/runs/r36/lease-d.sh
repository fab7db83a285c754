#!/usr/bin/env bash
# r36 lease d (H200), carry [".gl"]: gr.xz = r35 main (c45870c); gn.xz / gnops.xz / gnserve.xz =
# r36's tree with the tensor-core prefill attention (attention_prefill_coop.wgsl), uncommitted
# on cebfc5d. Its parity cases and teeth, the gates, the serving battery, then gr / gn alternated
# on prefill (bf16 512 and 2048, q4_k 2048) and a profile of gn's prefill.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gr gn gnops gnserve; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
echo "=== gn ops paged_attention $(t)"; timeout 150 /tmp/w/gnops "paged_attention[" --skip ::hip --skip ::cpu --skip ::cuda 2>&1 | grep -E "FAIL|panicked|^[0-9]+ passed|kernel specializations" | head -12
for b in gr gn gr gn; do
  echo "=== $b bf16 prefill $(t)"; timeout 45 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 8 --prefill 512,2048 2>&1 | grep -E "prefill [0-9]+:"
done
echo "=== gn prefill profile $(t)"; timeout 60 /tmp/w/gn bench --device wgpu:nvidia --shape qwen3-0.6b --decode 4 --prefill 2048 --profile 2>&1 | grep -iE "attention|prefill|linear_coop|total" | head -16
echo "=== gate all $(t)"; timeout 120 /tmp/w/gn gate --device wgpu:nvidia 2>&1 | grep -iE "fail|passed" | head -8
echo "=== serve battery $(t)"; timeout 100 /tmp/w/gnserve nvidia 2>&1 | grep -E "^test .*nvidia|passed|failed" | head -8
for b in gr gn; do
  echo "=== $b q4_k prefill $(t)"; timeout 45 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --quant q4_k --decode 8 --prefill 2048 2>&1 | grep -E "prefill [0-9]+:"
done
echo "=== done $(t)"
