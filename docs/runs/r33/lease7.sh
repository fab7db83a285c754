#!/usr/bin/env bash
# r33 lease 7 (H200), carry [".gl"]: the last device seconds. gp.xz / gpops.xz: lease 6's gp (the
# tree that lands); gprows.xz: its tests/linear_rows.rs binary. Row invariance of the linears
# (the unrolled split-K second pass) and the paged ops' invariance trials on the H200.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gpops gprows; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
echo "=== linear_rows"; timeout 120 /tmp/w/gprows 2>&1 | grep -E "nvidia|passed|FAIL|panicked" | head -20
echo "=== ops invariance"; timeout 90 /tmp/w/gpops invariance 2>&1 | grep -E "FAIL|passed" | tail -3
