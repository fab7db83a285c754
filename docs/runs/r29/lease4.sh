#!/usr/bin/env bash
# r29 lease 4 (H200), carry [".gl"]. head.xz: 1670810. c.xz: head + a decode step's causal conv1d
# (as many rows as sequences) in one dispatch (causal_conv1d_batch_steps). mvc.xz: c + the float
# matvec's workgroup by weight shape (K >= 2048: 128 threads, 1 row; N >= 65536: 32 threads).
# Alternated, Qwen3-0.6B and Qwen3.5-0.8B decode, and the 64-sequence serving step (the wide
# matvec takes the new workgroups too); then mvc's profiles, parity of the changed ops, tiny gate.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in head c mvc ops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for rep in 1 2; do
  for b in head c mvc; do
    for s in qwen3-0.6b qwen3.5-0.8b; do
      echo "=== $b $s rep $rep: $(/tmp/w/$b bench --device wgpu:nvidia --shape $s --decode 128 2>&1 | grep -E 'decode batch')"
    done
  done
done
for b in head mvc; do
  echo "=== $b qwen3-0.6b 64 sequences: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --batch 64 --prompt-len 128 --gen-len 64 --kv-dtype f16 2>&1 | grep -E 'batch +64:')"
done
for s in qwen3-0.6b qwen3.5-0.8b; do
  echo "=== mvc $s profile"
  /tmp/w/mvc bench --device wgpu:nvidia --shape $s --decode 64 --prefill 512 --profile 2>&1 | sed -n '/decode step/,/prefill 512: wall/p' | head -18
done
echo "=== parity (wgpu, cuda)"
for f in causal_conv1d_batch linear; do timeout 100 /tmp/w/ops $f 2>&1 | grep -E "passed|FAIL" | tail -3; done
echo "=== gate tiny (mvc)"
timeout 60 /tmp/w/mvc gate --case tiny 2>&1 | tail -1
