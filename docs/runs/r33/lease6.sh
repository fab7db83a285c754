#!/usr/bin/env bash
# r33 lease 6 (H200), carry [".gl"]. gj.xz: 6cd4079 (r32's main); gp.xz: linear_add_rms_norm with
# every split-K sum unrolled (its loads issued together: linear_splitk.wgsl and the fused norm);
# gq.xz: gp with linear_add_rms_norm refused (the unrolled second pass alone); gpops.xz /
# gpserve.xz: gp's ops and serving-battery test binaries. gp's parity and teeth on the H200, the
# gate and the serving battery, then serving throughput gj / gp / gq alternated.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gj gp gq gpops gpserve; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for f in "linear_add_rms_norm" "ops::linear" "ops::add_rms_norm"; do
  echo "=== ops $f"; timeout 150 /tmp/w/gpops "$f" 2>&1 | grep -E "FAIL|panicked|passed" | head -20
done
echo "=== gate tiny"; timeout 90 /tmp/w/gp gate --case tiny --device wgpu:nvidia 2>&1 | grep -iE "fail|passed" | head -12
echo "=== serve battery (H200)"; timeout 240 /tmp/w/gpserve nvidia 2>&1 | grep -E "^test |passed|failed" | head -12
for b in gj gp gq gj gp gq; do
  echo "=== $b qwen3-0.6b 1/8/32/64 sequences: $(timeout 120 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --batch 1,8,32,64 --prompt-len 128 --gen-len 128 --kv-dtype f16 2>&1 | grep -E 'batch +[0-9]+:' | sed -E 's/ +/ /g; s/\(.*//' | tr '\n' ';')"
done
for b in gj gp gq; do
  echo "=== $b qwen3.5-0.8b 64 sequences: $(timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 64 --prompt-len 128 --gen-len 64 --kv-dtype f16 2>&1 | grep -E 'batch +64:' | head -1)"
done
echo "=== gp qwen3-0.6b 64 sequences profile"
timeout 120 /tmp/w/gp bench --device wgpu:nvidia --shape qwen3-0.6b --batch 64 --prompt-len 128 --gen-len 32 --kv-dtype f16 --profile 2>&1 | grep -A12 "decode step" | head -14
