#!/usr/bin/env bash
# LOST, dropped (its patch: gated-norm-matvec-dropped.patch): 678 -> 605 tok/s, every workgroup norms the whole row again.
# r30 lease 5 (H200), carry [".gl"]. gb.xz: lease 4's (the lone gated attention, 8 lanes at head
# dim 256). gc.xz: gb + Qwen3.5's gated RMSNorm read inside the out projection of a lone decode
# step (rms_norm_gated_linear, matvec_gated_norm.wgsl). Alternated Qwen3.5 decode; gc's as-run
# and profile; parity of the new op on wgpu (cuda and hip refuse it); the tiny gate.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gb gc gops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for rep in 1 2; do
  for b in gb gc; do
    echo "=== $b qwen3.5-0.8b rep $rep: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"
  done
done
echo "=== gc qwen3.5-0.8b as-run 512: $(/tmp/w/gc bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'batch +1:' | head -1)"
echo "=== gc qwen3.5-0.8b profile"
/tmp/w/gc bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 64 --prefill 512 --profile 2>&1 | sed -n '/CPU time/p;/decode step/,/prefill 512: wall/p' | head -22
echo "=== parity (wgpu, cuda)"
timeout 100 /tmp/w/gops rms_norm_gated_linear 2>&1 | grep -E "passed|FAIL" | tail -3
echo "=== gate tiny (gc)"
timeout 60 /tmp/w/gc gate --case tiny 2>&1 | tail -1
