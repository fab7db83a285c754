#!/usr/bin/env bash
# r29 lease 3 (H200), carry [".gl"]. libt.xz: the lib tests (built with the prefetch patch, which
# the sweep does not touch: no prefetch is hinted there); ops.xz: 1670810's ops suite.
# The float matvec's M = 1 candidates in a dependent chain (linear::sweep, WGLLM_LINEAR_SWEEP=m1)
# on Qwen3-0.6B's projection shapes; then HEAD's parity of the lone attention kernels, with counts.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in libt ops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
WGLLM_BENCH_DEVICE=nvidia WGLLM_LINEAR_SWEEP=m1 timeout 300 /tmp/w/libt linear::sweep --ignored --nocapture 2>&1 | grep -vE "^\s+coop|nmse" | tail -90
echo "=== parity (wgpu, cuda)"
for f in rms_norm_rope_kv_attention paged_attention lone_attention_turns; do timeout 60 /tmp/w/ops $f 2>&1 | grep -E "passed|failed|FAIL" | tail -3; done
