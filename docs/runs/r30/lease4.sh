#!/usr/bin/env bash
# r30 lease 4 (H200), carry [".gl"]. fin.xz: fe72ebe. ga.xz: + Qwen3.5's lone gated attention in
# one dispatch (lease 1). gb.xz: ga + the lone kernel's key rows split over L = 8 lanes at
# head_dim 256 (a lane's slice and a thread's value rows 8 vec4s, not 16). Alternated decode;
# gb's profiles; parity of the attention ops on wgpu and cuda; the tiny gate.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in fin ga gb gops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for rep in 1 2; do
  for b in fin ga gb; do
    for s in qwen3.5-0.8b qwen3-0.6b; do
      echo "=== $b $s rep $rep: $(/tmp/w/$b bench --device wgpu:nvidia --shape $s --decode 128 2>&1 | grep -E 'decode batch')"
    done
  done
done
for b in fin gb; do
  echo "=== $b qwen3.5-0.8b as-run 512: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'batch +1:' | head -1)"
done
for s in qwen3.5-0.8b qwen3-0.6b; do
  echo "=== gb $s profile"
  /tmp/w/gb bench --device wgpu:nvidia --shape $s --decode 64 --prefill 512 --profile 2>&1 | sed -n '/CPU time/p;/decode step/,/prefill 512: wall/p' | head -22
done
echo "=== parity (wgpu, cuda)"
for f in paged_gated_attention rms_norm_rope_kv_attention "paged_attention["; do timeout 150 /tmp/w/gops "$f" 2>&1 | grep -E "passed|FAIL" | tail -4; done
echo "=== gate tiny (gb)"
timeout 60 /tmp/w/gb gate --case tiny 2>&1 | tail -1
