#!/usr/bin/env bash
# r55 call A (carry [".gl", ".peer"]): llama.cpp builds in the background (vs-llamacpp.sh build)
# while call1.sh's ablations run (their figures are GPU timestamps, which the build's CPU load
# leaves alone; its wall-time A/B is read within this call only).
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; xz -dc .gl/g0.xz > /tmp/w/g0; chmod +x /tmp/w/g0
(timeout 570 bash tools/bench/vs-llamacpp.sh build > /tmp/peer-build.log 2>&1; echo "=== peer build rc $? $(t)" >> /tmp/peer-build.log) &
timeout 450 bash docs/runs/r55/call1.sh; echo "call1 rc $? $(t)"
wait; tail -4 /tmp/peer-build.log; cp /tmp/peer-build.log $OUT/
echo "=== done $(t)"
