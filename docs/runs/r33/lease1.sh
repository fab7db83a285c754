#!/usr/bin/env bash
# r33 lease 1 (H200), carry [".gl"]. gj.xz: 6cd4079 (r32's main); gi.xz: the same with
# Tuning::gdn_conv_inside_max 64 (the conv inside gdn_conv_norm at every decode batch up to 64);
# gjops.xz: gj's ops test binary. gj's kernels on the H200 (ops gdn_conv_norm, the gates), Qwen3.5
# batches 8/16/32/64 under both limits, then where Qwen3's decode step and 2048-token prefill go.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gj gi gjops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
echo "=== ops gdn_conv_norm"; timeout 120 /tmp/w/gjops gdn_conv_norm 2>&1 | tail -2
echo "=== gate tiny"; timeout 90 /tmp/w/gj gate --case tiny --device wgpu:nvidia 2>&1 | tail -1
echo "=== gate qwen3_5-tiny"; timeout 90 /tmp/w/gj gate --case qwen3_5-tiny --device wgpu:nvidia 2>&1 | tail -1
for n in 8 16 32 64; do
  for b in gj gi gj gi; do
    echo "=== $b qwen3.5-0.8b $n sequences: $(timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch $n --prompt-len 128 --gen-len 64 --kv-dtype f16 2>&1 | grep -E "batch +$n:" | head -1)"
  done
done
echo "=== gj qwen3-0.6b profile"
timeout 120 /tmp/w/gj bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --prefill 2048 --profile 2>&1 | grep -v "^random"
