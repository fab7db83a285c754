#!/usr/bin/env bash
# r29 lease 2 (H200), carry [".gl"]. head.xz: 1670810; pf.xz (prefetch-dropped.patch on 1670810): each decode projection's matvec
# also reads the next projection's weights (up to 32 MiB) in its first workgroups, 16 words a
# thread (matvec_prefetch.wgsl); pf64.xz: the same with 64 words a thread (a quarter of the
# workgroups). Alternated; then pf's profile, its prefetch test (lib) and the tiny gate.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in head pf pf64 libt; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
B="bench --device wgpu:nvidia --shape qwen3-0.6b"
for rep in 1 2; do
  for b in head pf pf64; do
    echo "=== $b rep $rep: $(/tmp/w/$b $B --decode 128 2>&1 | grep -E 'decode batch')"
  done
done
for b in head pf; do
  echo "=== $b as-run 512-token prompt: $(/tmp/w/$b $B --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'batch +1:')"
done
echo "=== pf profile"
/tmp/w/pf $B --decode 64 --prefill 512 --profile 2>&1 | sed -n '/decode step/,/prefill 512: wall/p' | head -16
echo "=== pf qwen3.5-0.8b: $(/tmp/w/pf bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"
echo "=== prefetch test (lib, first adapter)"
timeout 60 /tmp/w/libt prefetch_changes 2>&1 | grep -E "test result|panicked|adapter"
echo "=== gate tiny (pf)"
timeout 40 /tmp/w/pf gate --case tiny 2>&1 | tail -1
