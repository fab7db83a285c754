#!/usr/bin/env bash
# r29 lease 1 (H200), carry [".gl"]. head.xz: 1670810 (r28 with the counter-words fix); l2.xz: the
# same with every layer sharing layer 0's weights (an experiment patch, not landed: one layer's
# weights fit the 50 MB L2, so its decode shows what the projections cost when their weights come
# from L2, the bound of a prefetch into L2). Then HEAD's parity of the lone kernel and the tiny gate.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in head l2 ops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
B="bench --device wgpu:nvidia --shape qwen3-0.6b"
for rep in 1 2; do
  echo "=== head rep $rep: $(/tmp/w/head $B --decode 128 2>&1 | grep -E 'decode batch')"
  echo "=== l2 shared rep $rep: $(WGLLM_EXP_SHARED=1 /tmp/w/l2 $B --decode 128 2>&1 | grep -E 'decode batch')"
done
echo "=== head profile"
/tmp/w/head $B --decode 64 --prefill 512 --profile 2>&1 | sed -n '/decode step/,/prefill 512: wall/p' | head -16
echo "=== l2 shared profile"
WGLLM_EXP_SHARED=1 /tmp/w/l2 $B --decode 64 --prefill 512 --profile 2>&1 | sed -n '/decode step/,/prefill 512: wall/p' | head -16
echo "=== head qwen3.5-0.8b: $(/tmp/w/head bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"
echo "=== parity (wgpu, cuda)"
for f in rms_norm_rope_kv_attention paged_attention lone_attention_turns; do timeout 60 /tmp/w/ops $f 2>&1 | tail -1; done  # (tail -1 showed naga's line, not the counts: re-run with counts in lease3)
echo "=== gate tiny (head)"
timeout 40 /tmp/w/head gate --case tiny 2>&1 | tail -1
