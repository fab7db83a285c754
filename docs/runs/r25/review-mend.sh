#!/usr/bin/env bash
# lease R: paged_gated_q.wgsl on wg_sum (the review's mend): parity, gate, teeth, one bench
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w /work && ln -sfn $PWD /work/main
for b in wgllm-both ops-both; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
D=wgpu:nvidia; W=/tmp/w/wgllm-both; O=/tmp/w/ops-both
{
echo "# $(cat .gl/rev) on the H200"
for f in paged_gated paged _batch; do timeout 30 $W parity --device $D --filter $f 2>&1 | grep -E "FAIL|passed" | tail -2; done
timeout 30 $W gate --device $D --case qwen3_5-tiny 2>&1 | grep -E "FAIL|passed" | tail -2
for f in teeth::query_norm teeth::gate_sign invariance; do echo "-- $f"; timeout 40 $O $f 2>&1 | grep -E "FAILED|^[0-9]+ passed" | tail -2; done
timeout 40 $W bench --shape qwen3.5-0.8b --device $D --decode 64 --prefill 2048 2>&1 | grep -E "decode batch|prefill [0-9]"
} > $OUT/r.log 2>&1; cat $OUT/r.log
