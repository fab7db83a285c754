#!/usr/bin/env bash
# r53's first call, carry [".gl"] (.gl: loader .debs, t0.xz = the lib test binary with
# phase_chain_probe's `stream` mode): a chain of dependent matvecs a dispatch each against
# dispatches holding several phases as workgroup rows that wait for the rows before.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; xz -dc .gl/t0.xz > /tmp/w/t0; chmod +x /tmp/w/t0
nvidia-smi --query-gpu=name --format=csv,noheader
WGLLM_BENCH_DEVICE=nvidia timeout 400 /tmp/w/t0 phase_chain_probe --ignored --nocapture 2>&1 | grep -v "^$" | tee $OUT/probe.log | tail -40
