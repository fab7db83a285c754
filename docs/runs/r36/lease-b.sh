#!/usr/bin/env bash
# r36 (scripted in r35), one call (H200), carry [".gl"]: no llama.cpp this time (two starts lost ~9 min of the 30).
# ga.xz: r33's tree (e8ad943); gr.xz: r35's main (c45870c); grops / grserve: its ops and serving tests.
# gr's new kernels checked on the H200 first, then ga / gr alternated: q4_k prefill (the quantized
# GEMM on tensor cores), the single stream (decode, CPU recording, prefill 2048), serving 1-64.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in ga gr grops grserve; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
/tmp/w/gr devices 2>&1 | grep -A1 -i nvidia | head -4
echo "=== ops linear $(t)"; timeout 150 /tmp/w/grops linear --skip ::hip 2>&1 | grep -E "FAIL|panicked|^[0-9]+ passed" | head -12
for b in ga gr ga gr; do
  echo "=== $b q4_k $(t)"; timeout 45 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --quant q4_k --decode 32 --prefill 512,2048 2>&1 | grep -E "decode batch|prefill [0-9]+:"
done
for b in ga gr; do
  echo "=== $b bf16 single stream $(t)"; timeout 45 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 --prefill 2048 2>&1 | grep -E "decode batch|CPU time|prefill [0-9]+:"
done
echo "=== gate tiny $(t)"; timeout 60 /tmp/w/gr gate --case tiny --device wgpu:nvidia 2>&1 | grep -iE "fail|passed" | head -6
echo "=== serve battery $(t)"; timeout 100 /tmp/w/grserve nvidia 2>&1 | grep -E "^test .*nvidia|passed|failed" | head -8
for f in "rms_norm_rope_kv" "invariance"; do
  echo "=== ops $f $(t)"; timeout 60 /tmp/w/grops "$f" --skip ::hip 2>&1 | grep -E "FAIL|panicked|^[0-9]+ passed" | head -12
done
for b in ga gr; do
  echo "=== $b serving $(t): $(timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --batch 1,8,32,64 --prompt-len 128 --gen-len 128 --kv-dtype f16 2>&1 | grep -E 'batch +[0-9]+:' | sed -E 's/ +/ /g; s/\(.*//' | tr '\n' ';')"
done
echo "=== done $(t)"
