#!/usr/bin/env bash
# r29 lease 5 (H200), carry [".gl"]. fin.xz: fe72ebe (this pass's two changes, as landed);
# head.xz: 1670810. The landed binary's rows of the peer table's wgpu column (decode bf16, f16,
# q8_0, q4_k; prefill 512 and 2048), the 512-token as-run decode, Qwen3.5, against head.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in head fin; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
B="bench --device wgpu:nvidia --shape qwen3-0.6b"
for b in head fin; do
  echo "=== $b bf16: $(/tmp/w/$b $B --dtype bf16 --decode 128 --prefill 512,2048 2>&1 | grep -E 'decode batch|prefill' | tr '\n' ' ')"
done
for b in fin head; do
  for q in "--dtype f16" "--quant q8_0" "--quant q4_k"; do
    echo "=== $b $q: $(/tmp/w/$b $B $q --decode 128 2>&1 | grep -E 'decode batch')"
  done
done
for b in head fin; do
  echo "=== $b as-run 512-token prompt: $(/tmp/w/$b $B --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'batch +1:')"
  echo "=== $b qwen3.5-0.8b: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 --prefill 512,2048 2>&1 | grep -E 'decode batch|prefill' | tr '\n' ' ')"
done
echo "=== gate tiny (fin, every device)"
timeout 60 /tmp/w/fin gate --case tiny 2>&1 | tail -1
