#!/usr/bin/env bash
# lease B: the lone partition (f8a5054) against main 2794a3d, alternated; its checks on the H200
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w /work && ln -sfn $PWD /work/main
for b in wgllm-main wgllm-new ops-new; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
D=wgpu:nvidia; O=/tmp/w/ops-new; W=/tmp/w/wgllm-new
{
echo "# $(cat .gl/rev) on the H200"
for rep in 1 2; do for b in main new; do for s in qwen3-0.6b qwen3.5-0.8b; do
  echo "=== rep $rep $b $s"; timeout 50 /tmp/w/wgllm-$b bench --shape $s --device $D --decode 128 2>&1 | grep -E "decode batch|CPU time"
done; done; done
for b in main new; do echo "=== as run 512: $b qwen3, qwen3.5"; for s in qwen3-0.6b qwen3.5-0.8b; do timeout 40 /tmp/w/wgllm-$b bench --shape $s --device $D --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E "batch  *[0-9]+:"; done; done
echo "=== new: parity paged, _batch (wgpu, cuda)"; for d in $D cuda; do for f in paged _batch; do timeout 60 $W parity --device $d --filter $f 2>&1 | grep -E "FAIL|passed" | tail -2; done; done
echo "=== new: gate tiny (wgpu, cuda)"; for d in $D cuda; do timeout 40 $W gate --device $d --case tiny 2>&1 | grep -E "FAIL|passed" | tail -3; done
echo "=== new: ops"; for f in invariance guards teeth::lone_partition teeth::row_gate teeth::gate_sign teeth::combine_first teeth::query_norm; do echo "-- $f"; timeout 60 $O $f 2>&1 | grep -E "FAILED|^[0-9]+ passed|panicked" | tail -4; done
} > $OUT/b.log 2>&1; cat $OUT/b.log
