#!/usr/bin/env bash
# r32 lease 2 (H200), carry [".gl"]: gh.xz: da5992e (gdn_batch_norm, the conv its own dispatch);
# gc.xz: the conv inside the fused op (gdn_conv_norm); gops.xz: the ops test binary with it.
# Qwen3.5-0.8B decode alternated three times, its as-run at a 512-token prompt, 64 sequences,
# a profile's dispatch count, then the changed ops' parity and teeth on the H200, the tiny gate.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gh gc gops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for rep in 1 2 3; do for b in gh gc; do
  echo "=== $b qwen3.5-0.8b rep $rep: $(timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"
done; done
for b in gh gc; do
  echo "=== $b qwen3.5-0.8b as-run 512: $(timeout 90 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'decode|batch +1:' | head -2 | tr '\n' ' ')"
done
for b in gh gc gh gc; do
  echo "=== $b qwen3.5-0.8b 64 sequences: $(timeout 120 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 64 --prompt-len 128 --gen-len 64 --kv-dtype f16 2>&1 | grep -E 'batch +64:' | head -1)"
done
for b in gh gc; do
  echo "=== $b profile"; timeout 90 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 --profile 2>&1 | grep -E "dispatch|gdn|conv|rms_norm_gated|total" | head -12
done
echo "=== ops gdn_conv_norm"; timeout 300 /tmp/w/gops gdn_conv_norm 2>&1 | tail -4
echo "=== ops gdn_batch"; timeout 200 /tmp/w/gops gdn_batch 2>&1 | tail -3
echo "=== ops invariance"; timeout 120 /tmp/w/gops invariance 2>&1 | tail -3
echo "=== gate tiny"; timeout 120 /tmp/w/gc gate --case tiny --device wgpu:nvidia 2>&1 | tail -4
