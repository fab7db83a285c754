#!/usr/bin/env bash
# r52's kernel call, carry [".gl", ".peer"] (.gl: loader .debs, g0.xz = b039168's binary,
# var.tar.xz from docs/runs/r52/mkvar.py): llama.cpp builds in the background while the lone
# attention's variants (base = main, out1 = step 6 in one round + four-lane serial loops, sg = out1
# + subgroup max / denominator) pass the device's attention parity and are timed by GPU
# timestamps (which the build's CPU load leaves alone); the fastest that passed goes to /tmp/best
# for lease3.sh on the same warm machine.
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
nvidia-smi -L
(timeout 560 bash tools/bench/vs-llamacpp.sh build > /tmp/peer-build.log 2>&1; echo "=== peer build rc $? $(t)" >> /tmp/peer-build.log) &
rm -rf /tmp/var; tar xJf .gl/var.tar.xz -C /tmp
mkdir -p /tmp/w; xz -dc .gl/g0.xz > /tmp/w/g0; chmod +x /tmp/w/g0
ok=""
for v in out1 sg; do
  echo "=== parity attention with $v $(t)"
  WGLLM_SHADER_DIR=/tmp/var/$v timeout 120 /tmp/w/g0 parity --device wgpu:nvidia --filter attention > /tmp/par-$v.log 2>&1
  grep -E "FAIL" /tmp/par-$v.log | cut -c1-200 | head -4; tail -2 /tmp/par-$v.log
  grep -qE "^[0-9]+ passed, 0 failed" /tmp/par-$v.log && ok="$ok $v"
done
echo "=== passed parity:$ok $(t)"
BINS="g0@/tmp/var/base $(for v in $ok; do printf 'g0@/tmp/var/%s ' $v; done)" \
  tools/bench/ab.sh 2 "--shape qwen3-0.6b --decode 128 --prefill 16 --profile" 2>&1 | tee /tmp/ab2.log |
  grep -E "^===|decode batch|paged_attention_lone" 
# the fastest lone attention (mean of its decode-step profile lines) among those that passed
best=$(awk '/^=== /{split($2,a,"/"); v=a[4]} /decode batch/{d=1} /prefill 16: wall/{d=0} d && /paged_attention_lone/{s[v]+=$2; n[v]++} END{b=""; for (k in s) if (b=="" || s[k]/n[k] < s[b]/n[b]) b=k; print b}' /tmp/ab2.log)
echo "=== best: $best $(t)"; rm -rf /tmp/best; cp -r /tmp/var/$best /tmp/best; echo $best > /tmp/best/NAME
echo "=== waiting for the build $(t)"; wait
grep -E "STEP|rc " /tmp/peer-build.log | tail -4; cp /tmp/peer-build.log /tmp/ab2.log /tmp/par-*.log $OUT/ 2>/dev/null
echo "=== done $(t)"
