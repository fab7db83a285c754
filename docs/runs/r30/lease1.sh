#!/usr/bin/env bash
# r30 lease 1 (H200), carry [".gl"]. fin.xz: fe72ebe (r29's landed kernels; c0a497c adds only an
# odd-R mend no Qwen shape meets). ga.xz: + Qwen3.5's gated attention of a lone decode step in one
# dispatch (paged_attention_lone.wgsl with the gated prologue). Alternated decode, Qwen3.5 and
# Qwen3; ga's Qwen3.5 profile; parity of the attention ops on wgpu and cuda; the tiny gate.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in fin ga gops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for rep in 1 2; do
  for b in fin ga; do
    for s in qwen3.5-0.8b qwen3-0.6b; do
      echo "=== $b $s rep $rep: $(/tmp/w/$b bench --device wgpu:nvidia --shape $s --decode 128 2>&1 | grep -E 'decode batch')"
    done
  done
done
echo "=== ga qwen3.5-0.8b as-run 512: $(/tmp/w/ga bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'decode' | head -2)"
echo "=== ga qwen3.5-0.8b profile"
/tmp/w/ga bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 64 --prefill 512 --profile 2>&1 | sed -n '/CPU time/p;/decode step/,/prefill 512: wall/p' | head -22
echo "=== parity (wgpu, cuda)"
for f in paged_gated_attention rms_norm_rope_kv_attention "paged_attention["; do timeout 150 /tmp/w/gops "$f" 2>&1 | grep -E "passed|FAIL" | tail -4; done
echo "=== gate tiny (ga)"
timeout 60 /tmp/w/ga gate --case tiny 2>&1 | tail -1
