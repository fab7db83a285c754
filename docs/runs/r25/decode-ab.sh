#!/usr/bin/env bash
# lease P: A/B of the lone decode (main aca5bec, fuse2 = add_rms_norm_linear, split = the gated split, both), then checks of `both`
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w /work && ln -sfn $PWD /work/main
for b in wgllm-main wgllm-split wgllm-fuse2 wgllm-both ops-both; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
D=wgpu:nvidia; O=/tmp/w/ops-both
{
echo "# $(cat .gl/rev) on the H200"
for rep in 1 2; do for b in main fuse2 split both; do for s in qwen3-0.6b qwen3.5-0.8b; do
  echo "=== rep $rep $b $s"; timeout 40 /tmp/w/wgllm-$b bench --shape $s --device $D --decode 128 --prefill 512 2>&1 | grep -E "decode batch|CPU time"
done; done; done
for b in main fuse2 both; do
  echo "=== as run: $b qwen3 512, qwen3.5 512, 2048"
  timeout 40 /tmp/w/wgllm-$b bench --shape qwen3-0.6b --device $D --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E "batch  *[0-9]+:"
  for P in 512 2048; do timeout 40 /tmp/w/wgllm-$b bench --shape qwen3.5-0.8b --device $D --batch 1 --prompt-len $P --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E "batch  *[0-9]+:"; done
done
echo "=== both: qwen3.5 prefill"; timeout 60 /tmp/w/wgllm-both bench --shape qwen3.5-0.8b --device $D --decode 64 --prefill 512,2048 2>&1 | grep -E "decode batch|prefill [0-9]|dispatches"
echo "=== both: qwen3 decode profile"; timeout 60 /tmp/w/wgllm-both bench --shape qwen3-0.6b --device $D --decode 64 --prefill 512 --profile 2>&1 | grep -A12 "decode step"
echo "=== both: gate tiny (wgpu, cuda)"; for d in $D cuda; do timeout 40 /tmp/w/wgllm-both gate --device $d --case tiny 2>&1 | grep -E "FAIL|passed" | tail -3; done
echo "=== both: parity add_rms_norm_linear, paged, _batch (wgpu)"; for f in add_rms_norm_linear paged _batch; do timeout 40 /tmp/w/wgllm-both parity --device $D --filter $f 2>&1 | grep -E "FAIL|passed" | tail -3; done
echo "=== both: ops teeth norm_, split teeth, guards"; for f in teeth::norm_ teeth::gate_sign teeth::query_norm guards; do timeout 60 $O $f 2>&1 | grep -E "FAILED|^[0-9]+ passed|panicked" | tail -3; done
echo "=== both: ops invariance (messages)"; timeout 60 $O invariance --nocapture 2>&1 | grep -E "FAILED|passed with|^[0-9]+ passed|panicked|red as" | tail -14
echo "=== both: ops invariance, one thread"; timeout 90 $O invariance --test-threads=1 2>&1 | grep -E "FAILED|^[0-9]+ passed" | tail -6
} > $OUT/p.log 2>&1; cat $OUT/p.log
