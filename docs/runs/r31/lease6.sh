#!/usr/bin/env bash
# r31 lease 6 (H200), carry [".gl"]. gb.xz: e1db4ef's kernels (r30's main). gh.xz: gdn_batch_norm
# as lease 5 ran it (the last tile re-reads the row and sums it with wg_sum). gi.xz: 7aed852 (each
# tile hands over g = o * w * silu(z), w and z loaded before the token, and its sum of squares;
# the last tile scales the row). Alternated decode; as-run; gi's profile; parity; gate; invariance.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gb gh gi gops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for rep in 1 2; do
  for b in gb gh gi; do
    echo "=== $b qwen3.5-0.8b rep $rep: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"
  done
done
for b in gb gi; do
  echo "=== $b qwen3-0.6b: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E 'decode batch')"
  echo "=== $b qwen3.5-0.8b as-run 512: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'batch +1:' | head -1)"
done
echo "=== gi qwen3.5-0.8b profile"
/tmp/w/gi bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 64 --profile 2>&1 | sed -n '/CPU time/p;/decode step: wall/,/unprofiled/p' | head -10
echo "=== parity gdn_batch (wgpu, cuda)"
timeout 200 /tmp/w/gops gdn_batch 2>&1 | grep -E "passed|FAIL" | tail -6
echo "=== gate tiny (gi)"
timeout 60 /tmp/w/gi gate --case tiny 2>&1 | tail -1
echo "=== ops invariance"
timeout 100 /tmp/w/gops invariance 2>&1 | grep -E "passed|FAIL" | tail -4
