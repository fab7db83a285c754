#!/usr/bin/env bash
# r33 lease 2 (H200), carry [".gl"]. gj.xz: 6cd4079 (r32's main); gk.xz: the prefill attention tile
# on cooperative matrices (attention_prefill_tc.wgsl, uncommitted work tree); gkops.xz: gk's ops
# test binary. gk's parity on the H200 (attention, paged attention, the paged guards), the gates,
# then prefill gj / gk alternated and gk's profile.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gj gk gkops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for f in "ops::attention[" "ops::paged_attention[" "ops::paged_gated_attention[" "guards::paged_attention"; do
  echo "=== ops $f"; timeout 150 /tmp/w/gkops "$f" 2>&1 | grep -E "FAIL|panicked|nmse|passed" | head -30
done
echo "=== gate tiny"; timeout 90 /tmp/w/gk gate --case tiny --device wgpu:nvidia 2>&1 | tail -3
echo "=== gate qwen3_5-tiny"; timeout 90 /tmp/w/gk gate --case qwen3_5-tiny --device wgpu:nvidia 2>&1 | tail -1
for b in gj gk gj gk; do
  echo "=== $b qwen3-0.6b: $(timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 16 --prefill 512,2048 2>&1 | grep -E 'prefill (512|2048):' | tr -s ' ' | tr '\n' ' ')"
done
echo "=== gk qwen3-0.6b profile"
timeout 120 /tmp/w/gk bench --device wgpu:nvidia --shape qwen3-0.6b --decode 16 --prefill 2048 --profile 2>&1 | grep -A12 "prefill 2048: wall"
