#!/usr/bin/env bash
# r57 call A (carry [".gl", ".peer"]): llama.cpp builds in the background (vs-llamacpp.sh build)
# while the GPU's whole parity suite runs on g2 (main with exp/r55-linear-add merged, 8a66fbc);
# nothing wall-timed runs beside the build.
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; xz -dc .gl/g2.xz > /tmp/w/g2; chmod +x /tmp/w/g2
(timeout 570 bash tools/bench/vs-llamacpp.sh build > /tmp/peer-build.log 2>&1; echo "=== peer build rc $? $(t)" >> /tmp/peer-build.log) &
timeout 480 /tmp/w/g2 parity --device wgpu:nvidia > $OUT/parity-g2.log 2>&1; echo "parity rc $? $(t)"
grep -E "FAIL" $OUT/parity-g2.log | head -20; tail -3 $OUT/parity-g2.log
wait; tail -4 /tmp/peer-build.log; cp /tmp/peer-build.log $OUT/
echo "=== done $(t)"
