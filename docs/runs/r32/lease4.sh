#!/usr/bin/env bash
# r32 lease 4 (H200), carry [".gl"]: gh.xz: da5992e; gd.xz: 70202c5 (the branch-free conv
# window); ge.xz: the same with v convolved before q/k's loads and reduction. Qwen3.5-0.8B decode
# alternated three times.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gh gd ge; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for rep in 1 2 3; do for b in gh gd ge; do
  echo "=== $b qwen3.5-0.8b rep $rep: $(timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 2>&1 | grep -E 'decode batch')"
done; done
echo "=== ge profile"; timeout 90 /tmp/w/ge bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 128 --profile 2>&1 | grep -E "dispatch|gdn" | head -4
