#!/usr/bin/env bash
# r30 lease 6 (H200), carry [".gl"]: e1db4ef's ops harness on the H200: the paged guards (the
# lone attention kernel's turns), the batch-invariance checks, and the tiny gate with gb.xz (the
# landed kernels).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gb gops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
for f in guards invariance; do echo "=== $f"; timeout 150 /tmp/w/gops "$f" 2>&1 | grep -E "^test |passed|FAIL" | tail -20; done
echo "=== gate tiny (gb)"
timeout 60 /tmp/w/gb gate --case tiny 2>&1 | tail -1
