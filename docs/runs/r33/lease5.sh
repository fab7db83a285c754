#!/usr/bin/env bash
# r33 lease 5 (H200), carry [".gl"]. gj.xz: 6cd4079 (r32's main); gn.xz: linear_add_rms_norm (the
# o and down projections' split-K partials summed inside the add + norm after them, y stored after the row's loads; uncommitted);
# gnops.xz / gnserve.xz: gn's ops and serving-battery test binaries. gn's parity and teeth on the
# H200, the linears around it, the gates and the serving battery, then serving throughput gj / gn
# alternated and gn's 64-sequence profile.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gj gn gnops gnserve; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for f in "linear_add_rms_norm" "ops::add_rms_norm" "ops::rms_norm_gated"; do
  echo "=== ops $f"; timeout 150 /tmp/w/gnops "$f" 2>&1 | grep -E "FAIL|panicked|passed" | head -20
done
echo "=== gate tiny"; timeout 90 /tmp/w/gn gate --case tiny --device wgpu:nvidia 2>&1 | grep -iE "fail|passed" | head -12
echo "=== serve battery (H200)"; timeout 240 /tmp/w/gnserve nvidia 2>&1 | grep -E "serve::|alone|batched|FAIL|passed|failed" | head -30
for b in gj gn gj gn; do
  echo "=== $b qwen3-0.6b 1/8/32/64 sequences: $(timeout 120 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --batch 1,8,32,64 --prompt-len 128 --gen-len 128 --kv-dtype f16 2>&1 | grep -E 'batch +[0-9]+:' | sed -E 's/ +/ /g; s/\(.*//' | tr '\n' ';')"
done
for b in gj gn; do
  echo "=== $b qwen3.5-0.8b 64 sequences: $(timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 64 --prompt-len 128 --gen-len 64 --kv-dtype f16 2>&1 | grep -E 'batch +64:' | head -1)"
done
echo "=== gn qwen3-0.6b 64 sequences profile"
timeout 120 /tmp/w/gn bench --device wgpu:nvidia --shape qwen3-0.6b --batch 64 --prompt-len 128 --gen-len 32 --kv-dtype f16 --profile 2>&1 | grep -A16 "decode step" | head -40
