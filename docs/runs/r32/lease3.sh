#!/usr/bin/env bash
# r32 lease 3 (H200), carry [".gl"]: gh.xz: da5992e (the conv its own dispatch); gc.xz: 24d851d
# (the conv inside gdn_conv_norm, its loads behind branches); gd.xz: the window loaded without
# branches, the state written from registers. Qwen3.5-0.8B decode alternated, 64 sequences, gd's
# profile, then gdn_conv_norm's parity and teeth on the H200 and the tiny gate with gd.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gh gc gd gops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for rep in 1 2; do for b in gh gc gd; do
  echo "=== $b qwen3.5-0.8b rep $rep: $(timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"
done; done
for b in gh gd gh gd; do
  echo "=== $b qwen3.5-0.8b 64 sequences: $(timeout 120 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 64 --prompt-len 128 --gen-len 64 --kv-dtype f16 2>&1 | grep -E 'batch +64:' | head -1)"
done
echo "=== gd profile"; timeout 90 /tmp/w/gd bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 --profile 2>&1 | grep -E "dispatch|gdn|conv|rms_norm_gated|paged" | head -8
echo "=== ops gdn_conv_norm"; timeout 300 /tmp/w/gops gdn_conv_norm 2>&1 | tail -3
echo "=== gate tiny"; timeout 120 /tmp/w/gd gate --case tiny --device wgpu:nvidia 2>&1 | tail -1
