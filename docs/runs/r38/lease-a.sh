#!/usr/bin/env bash
# r37 lease a (H200), carry [".gl"] (gt.xz: the lib test binary of 244b280, r37 main; gr.xz:
# r35's main c45870c, whose kernels are main's). The probes and sweeps r37 built without a GPU:
#   phase_chain_probe: a chain of matvecs as dispatches vs one persistent dispatch (grid barriers,
#     next weights loaded before the wait) -> is a persistent decode kernel worth building?
#   attention_sweep: the prefill attention tile against 8 more shapes -> TILES
#   linear::sweep coop: two larger GEMM tiles at M = 2048 -> COOP_GEMM
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gt gr; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
export WGLLM_BENCH_DEVICE=nvidia
echo "=== phase_chain_probe $(t)"; timeout 150 /tmp/w/gt phase_chain_probe --ignored --nocapture 2>&1 | grep -E "phases as|rows wrong|panicked|test result"
echo "=== attention_sweep $(t)"; timeout 150 /tmp/w/gt attention_sweep --ignored --nocapture 2>&1 | grep -vE "^$|^running|^test |^note"
echo "=== coop sweep $(t)"; WGLLM_LINEAR_SWEEP=coop timeout 240 /tmp/w/gt linear::sweep::sweep --ignored --nocapture 2>&1 | grep -E "FAIL|^M(64|256|2048) |coop_n4x2_m2x4_ks1_bk64 |coop_n8x2|coop_n4x2_m4x4|plan\(\)|done" | head -80
echo "=== done $(t)"
