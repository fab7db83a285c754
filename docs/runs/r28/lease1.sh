#!/usr/bin/env bash
# r28 lease 1 (H200): a lone decode step's paged attention in one dispatch over 32-key
# partitions, combined by the last workgroup (paged_attention_lone.wgsl), against the one
# workgroup walk a kv head it replaces; alternated. base.xz: 298baec; s1.xz: the new kernel.
# Then its parity (paged_ filter, wgpu and cuda), the tiny model gate, a decode profile.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
cd /tmp/w
for b in base s1 ops; do xz -dc $R/.gl/$b.xz > $b && chmod +x $b; done
./base bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch"
for rep in 1 2; do
  for b in base s1; do
    echo "=== $b qwen3-0.6b rep $rep"
    ./$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 --prefill 512 2>&1 | grep -E "decode batch|prefill"
    echo "=== $b qwen3-0.6b as-run 512-token prompt rep $rep"
    ./$b bench --device wgpu:nvidia --shape qwen3-0.6b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E "batch +1:|decode"
  done
done
echo "=== s1 qwen3.5-0.8b"
./s1 bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E "decode batch"
echo "=== s1 profile"
./s1 bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --prefill 512 --profile 2>&1 | sed -n '/decode step/,/prefill 512: wall/p' | head -16
cd $R
echo "=== parity paged (wgpu, cuda)"
timeout 200 /tmp/w/ops paged_ 2>&1 | tail -2
echo "=== gate tiny"
timeout 100 /tmp/w/s1 gate --case tiny 2>&1 | tail -2
