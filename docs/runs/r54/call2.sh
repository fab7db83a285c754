#!/usr/bin/env bash
# r54 call 2 (carry [".gl", ".peer"], the warm machine of call 1): llama.cpp builds in the
# background (vs-llamacpp.sh build) while g1 (main's kernels) runs the whole parity suite on this GPU.
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; [ -x /tmp/w/g1 ] || { xz -dc .gl/g1.xz > /tmp/w/g1; chmod +x /tmp/w/g1; }
(timeout 560 bash tools/bench/vs-llamacpp.sh build > /tmp/peer-build.log 2>&1; echo "=== peer build rc $? $(t)" >> /tmp/peer-build.log) &
timeout 400 /tmp/w/g1 parity --device wgpu:nvidia > /tmp/parity-all.log 2>&1; echo "parity rc $? $(t)"
grep -E "FAIL" /tmp/parity-all.log | cut -c1-200 | head -20; tail -2 /tmp/parity-all.log
cp /tmp/parity-all.log $OUT/
wait; tail -4 /tmp/peer-build.log; cp /tmp/peer-build.log $OUT/
echo "=== done $(t)"
