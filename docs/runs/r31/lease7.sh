#!/usr/bin/env bash
# r31 lease 7 (H200), carry [".gl"]: the session's last device seconds. gb.xz: e1db4ef's kernels;
# gi.xz: 7aed852 (gdn_batch_norm). Qwen3.5 at 64 sequences (the fused kernel's many-sequence
# decode batches: 64 x 16 heads x 4 tiles), then a third alternation of the one-sequence decode.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; for b in gb gi; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for b in gb gi; do
  echo "=== $b qwen3.5-0.8b 64 sequences: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 64 --prompt-len 128 --gen-len 64 --kv-dtype f16 2>&1 | grep -E 'batch +64:' | head -1)"
done
for b in gb gi; do
  echo "=== $b qwen3.5-0.8b rep 3: $(/tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"
done
