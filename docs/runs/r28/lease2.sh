#!/usr/bin/env bash
# r28 lease 2 (H200): the lone decode attention kernel rewritten for few memory round trips
# (description, table and query loaded together; a chunk's key and value rows together; the
# combine's records at once), 128 threads / 32-key chunks (s2) and 256 / 64 (s3), against
# 298baec (base); alternated. Then s2's parity (paged_, wgpu and cuda), the tiny gate, a profile.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
cd /tmp/w
for b in base s2 s3 ops; do xz -dc $R/.gl/$b.xz > $b && chmod +x $b; done
./base bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch"
for rep in 1 2; do
  for b in base s2 s3; do
    echo "=== $b qwen3-0.6b rep $rep"
    ./$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 --prefill 512 2>&1 | grep -E "decode batch"
    echo "=== $b qwen3-0.6b as-run 512-token prompt rep $rep"
    ./$b bench --device wgpu:nvidia --shape qwen3-0.6b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E "batch +1:"
  done
done
echo "=== s2 profile"
./s2 bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --prefill 512 --profile 2>&1 | grep -E "paged_attention|rms_norm_rope_kv|unprofiled"
cd $R
echo "=== parity paged (wgpu, cuda)"
timeout 200 /tmp/w/ops paged_ 2>&1 | tail -2
echo "=== gate tiny"
timeout 100 /tmp/w/s2 gate --case tiny 2>&1 | tail -2
