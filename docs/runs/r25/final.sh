#!/usr/bin/env bash
# lease Q: the tree `both` (add_rms_norm_linear + the gated split) against main aca5bec; its checks (this tree is the one the teeth patch)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w /work && ln -sfn $PWD /work/main
for b in wgllm-main wgllm-both ops-both; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
D=wgpu:nvidia; O=/tmp/w/ops-both; W=/tmp/w/wgllm-both
{
echo "# $(cat .gl/rev) on the H200"
for b in main both; do
  echo "=== $b qwen3.5 lone"; timeout 50 /tmp/w/wgllm-$b bench --shape qwen3.5-0.8b --device $D --decode 128 --prefill 512,2048 2>&1 | grep -E "bandwidth limit|decode batch|CPU time|prefill [0-9]"
  echo "=== $b qwen3.5 as run, 512 / 2048"; for P in 512 2048; do timeout 40 /tmp/w/wgllm-$b bench --shape qwen3.5-0.8b --device $D --batch 1 --prompt-len $P --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E "batch  *[0-9]+:"; done
  echo "=== $b qwen3 lone, as run 512"; timeout 40 /tmp/w/wgllm-$b bench --shape qwen3-0.6b --device $D --decode 128 --prefill 2048 2>&1 | grep -E "decode batch|prefill [0-9]"; timeout 40 /tmp/w/wgllm-$b bench --shape qwen3-0.6b --device $D --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E "batch  *[0-9]+:"
done
echo "=== both: parity paged, _batch, add_rms_norm_linear (wgpu, cuda)"; for d in $D cuda; do for f in paged _batch add_rms_norm_linear; do timeout 40 $W parity --device $d --filter $f 2>&1 | grep -E "FAIL|passed" | tail -2; done; done
echo "=== both: gate tiny (wgpu, cuda)"; for d in $D cuda; do timeout 40 $W gate --device $d --case tiny 2>&1 | grep -E "FAIL|passed" | tail -3; done
echo "=== both: ops"; for f in invariance guards teeth::gate_sign teeth::query_norm teeth::combine_first teeth::chunk_causal teeth::key_norm teeth::lone_ teeth::norm_ teeth::block_index; do echo "-- $f"; timeout 60 $O $f 2>&1 | grep -E "FAILED|^[0-9]+ passed|panicked" | tail -4; done
} > $OUT/q.log 2>&1; cat $OUT/q.log
