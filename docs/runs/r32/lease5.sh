#!/usr/bin/env bash
# r32 lease 5 (H200), carry [".gl"]: the session's last device seconds. gh.xz: da5992e; ge.xz:
# 4ba4f76; gops.xz: its ops test binary. The gated delta rule's parity and teeth (the `gdn` filter:
# gdn_recurrent, gdn_chunked, gdn_batch, gdn_conv_norm) and the invariance trials on the H200, the
# tiny gate, then Qwen3.5-0.8B's as-run at a 512-token prompt and 64 sequences, gh then ge.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gh ge gops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
echo "=== ops gdn"; timeout 120 /tmp/w/gops gdn 2>&1 | tail -2
echo "=== ops invariance"; timeout 60 /tmp/w/gops invariance 2>&1 | tail -2
echo "=== gate tiny"; timeout 60 /tmp/w/ge gate --case tiny --device wgpu:nvidia 2>&1 | tail -1
for b in gh ge; do
  echo "=== $b qwen3.5-0.8b as-run 512: $(timeout 40 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 1 --prompt-len 512 --gen-len 128 --kv-dtype f32 --as-run 2>&1 | grep -E 'batch +1:' | head -1)"
done
for b in gh ge; do
  echo "=== $b qwen3.5-0.8b 64 sequences: $(timeout 40 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --batch 64 --prompt-len 128 --gen-len 64 --kv-dtype f16 2>&1 | grep -E 'batch +64:' | head -1)"
done
