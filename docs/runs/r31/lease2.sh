#!/usr/bin/env bash
# r31 lease 2 (H200), carry [".gl"]. gb.xz: e1db4ef's kernels (r30's main). gn.xz: 0b78f99, gdn_batch_norm as a hand-over between a head's tiles
# (Qwen3.5's gated RMSNorm in the gated delta rule's epilogue). Alternated decode; as-run; gn's
# profile; parity of gdn_batch / gdn_batch_norm on wgpu (and their teeth); the tiny gate.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gb gn gops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for rep in 1 2; do
  for b in gb gn; do
    echo "=== $b qwen3.5-0.8b rep $rep: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"
  done
done
for b in gb gn; do
  echo "=== $b qwen3-0.6b: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E 'decode batch')"
  echo "=== $b qwen3.5-0.8b as-run 512: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'batch +1:' | head -1)"
done
echo "=== gn qwen3.5-0.8b profile"
/tmp/w/gn bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 64 --prefill 512 --profile 2>&1 | sed -n '/CPU time/p;/decode step/,/prefill 512: wall/p' | head -24
echo "=== parity gdn_batch (wgpu, cuda)"
timeout 200 /tmp/w/gops gdn_batch 2>&1 | grep -E "passed|FAIL" | tail -6
echo "=== gate tiny (gn)"
timeout 60 /tmp/w/gn gate --case tiny 2>&1 | tail -1
