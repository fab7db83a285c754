#!/usr/bin/env bash
# r52's first call, carry [".gl", ".peer"] (.gl: loader .debs, g0.xz = main b039168's binary,
# abl.tar.xz from docs/runs/r51/mkabl.py): llama.cpp builds in the background (the peer's half of
# the lease; `bench` must follow on the same warm machine) while r51's attention cut points run
# (docs/runs/r51/ablate.sh: GPU timestamps, which the build's CPU load leaves alone), then g0's
# parity on this device.
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
(timeout 570 bash tools/bench/vs-llamacpp.sh build > /tmp/peer-build.log 2>&1; echo "=== peer build rc $? $(t)" >> /tmp/peer-build.log) &
bash docs/runs/r51/ablate.sh
echo "=== ablate done $(t)"
mkdir -p /tmp/w; xz -dc .gl/g0.xz > /tmp/w/g0; chmod +x /tmp/w/g0
left=$(( 540 - $(date +%s) + T0 ))
[ $left -gt 60 ] && { echo "=== g0 parity $(t)"; timeout $left /tmp/w/g0 parity --device wgpu:nvidia 2>&1 | grep -E "FAIL|passed" | cut -c1-200 | tail -8; }
echo "=== waiting for the build $(t)"; wait
grep -E "STEP|rc |error" /tmp/peer-build.log | tail -20; cp /tmp/peer-build.log $OUT/ 2>/dev/null
echo "=== done $(t)"
