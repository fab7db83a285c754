#!/usr/bin/env bash
# lease O: the gated split (split) vs main (aca5bec); the add + norm read inside the projection (fuse, WIP) vs main
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w /work && ln -sfn $PWD /work/main
for b in wgllm-main wgllm-split wgllm-fuse ops-split; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
D=wgpu:nvidia; O=/tmp/w/ops-split
{
echo "# $(cat .gl/rev) on the H200"
for s in qwen3.5-0.8b qwen3-0.6b; do for b in main split fuse; do
  echo "=== $s lone path: $b"; timeout 60 /tmp/w/wgllm-$b bench --shape $s --device $D --decode 64 --prefill 512,2048 2>&1 | grep -E "bandwidth limit|decode batch|prefill [0-9]|dispatches"
done; done
for b in main split fuse; do
  echo "=== qwen3.5 as run, prompt 2048 / 512: $b"; for P in 2048 512; do timeout 40 /tmp/w/wgllm-$b bench --shape qwen3.5-0.8b --device $D --batch 1 --prompt-len $P --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E "batch  *[0-9]+:"; done
done
echo "=== fuse: qwen3 decode profile"; timeout 60 /tmp/w/wgllm-fuse bench --shape qwen3-0.6b --device $D --decode 64 --profile 2>&1 | grep -E "decode|matvec|add_rms|paged|rms_norm|dispatch" | head -20
echo "=== fuse: qwen3 serving 1,8"; timeout 60 /tmp/w/wgllm-fuse bench --shape qwen3-0.6b --device $D --batch 1,8 --prompt-len 128 --gen-len 128 --kv-dtype f16 2>&1 | grep -E "batch  *[0-9]+:"
echo "=== main: qwen3 serving 1,8"; timeout 60 /tmp/w/wgllm-main bench --shape qwen3-0.6b --device $D --batch 1,8 --prompt-len 128 --gen-len 128 --kv-dtype f16 2>&1 | grep -E "batch  *[0-9]+:"
echo "=== split: parity paged, _batch (wgpu, cuda)"; for d in $D cuda; do for f in paged _batch; do timeout 40 /tmp/w/wgllm-split parity --device $d --filter $f 2>&1 | grep -E "FAIL|passed" | tail -3; done; done
echo "=== split: gate tiny (wgpu, cuda)"; for d in $D cuda; do timeout 40 /tmp/w/wgllm-split gate --device $d --case tiny 2>&1 | grep -E "FAIL|passed" | tail -3; done
echo "=== fuse: gate tiny (wgpu)"; timeout 40 /tmp/w/wgllm-fuse gate --device $D --case tiny 2>&1 | grep -E "FAIL|passed|teacher" | tail -5
echo "=== split: ops invariance x2, guards, teeth"; for f in invariance invariance guards teeth::gate_sign teeth::query_norm teeth::combine_first; do timeout 60 $O $f 2>&1 | grep -E "FAILED|^[0-9]+ passed|panicked" | tail -3; done
} > $OUT/o.log 2>&1; cat $OUT/o.log
