#!/usr/bin/env bash
# r28 lease 3 (H200), two calls, carry [".gl", ".peer"]. base.xz: 298baec; s2u.xz: the lone decode
# attention kernel in one dispatch (paged_attention_lone.wgsl, unchecked; not carried: the kit and
# three binaries exceed the carry limit); s4.xz: s2u + the q/k
# norm, RoPE and cache write inside it (rms_norm_rope_kv_attention).
# call 1:
#   OUT=/tmp/vs bash tools/bench/vs-llamacpp.sh build 2>&1 | tail -25
# call 2: this script: the three alternated, the fastest decode picked for the peer table, then
# the new kernels' parity and the tiny gate.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in base s4 ops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
declare -A sum
for rep in 1 2; do
  for b in base s4; do
    t=$(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 --prefill 512 2>&1 | grep -E "decode batch")
    echo "=== $b qwen3-0.6b rep $rep: $t"
    v=$(echo "$t" | sed -E 's/.*batch 1: ([0-9.]+).*/\1/')
    sum[$b]=$(python3 -c "print(${sum[$b]:-0} + ${v:-0})")
  done
done
for b in base s4; do
  echo "=== $b as-run 512-token prompt: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3-0.6b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'batch +1:')"
done
W=$(for b in base s4; do echo "${sum[$b]} $b"; done | sort -rn | head -1 | cut -d' ' -f2)
echo "=== the peer table with $W (decode sums: base ${sum[base]}, s4 ${sum[s4]})"
WGLLM=/tmp/w/$W OUT=/tmp/vs/vs timeout 330 bash tools/bench/vs-llamacpp.sh bench 2>&1 | grep -vE "^\s+--|TIMING" | tail -40
echo "=== parity (wgpu, cuda)"
timeout 60 /tmp/w/ops rms_norm_rope_kv_attention 2>&1 | tail -2
timeout 60 /tmp/w/ops paged_attention 2>&1 | tail -2
echo "=== gate tiny (s4)"
timeout 40 /tmp/w/s4 gate --case tiny 2>&1 | tail -1
