#!/usr/bin/env bash
# r39 lease 1, call 2: ours (main ec0f634, wgpu and cuda) then llama.cpp (CUDA, Vulkan, batched), the ratio table.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
[ -x /tmp/w/g0 ] || { xz -dc .gl/g0.xz > /tmp/w/g0 && chmod +x /tmp/w/g0; }
nvidia-smi -L
T0=$(date +%s)
WGLLM=/tmp/w/g0 OUT=$OUT/vs timeout 590 bash tools/bench/vs-llamacpp.sh bench 2>&1 | tail -80
rm -rf $OUT/vs
echo "=== done [$(( $(date +%s) - T0 )) s]"
