#!/usr/bin/env bash
# lease C: the pipelined decode's read-back wait, blocking (f8a5054) against spinning (experiment), alternated
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; for b in wgllm-new wgllm-spin; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
{
echo "# base=f8a5054 spin=f8a5054+spinning read-back wait on the H200"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,pstate,power.draw --format=csv
for rep in 1 2 3; do for b in new spin; do
  echo "=== rep $rep $b qwen3-0.6b"; timeout 40 /tmp/w/wgllm-$b bench --shape qwen3-0.6b --device wgpu:nvidia --decode 128 --prefill 512 2>&1 | grep -E "decode batch|CPU time"
done; done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,pstate,power.draw --format=csv
} > $OUT/c.log 2>&1; cat $OUT/c.log
