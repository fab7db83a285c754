#!/usr/bin/env bash
# r38 lease d, carry [".gl"]: why lease-c's q4_k decode was slower on gb than on gr. gr = r35's
# main (c45870c); gb = 742d5f4 (r37's quantized add_rms_norm_linear, and r36's quant Params
# refactors 2347f30 / cebfc5d); gx = gb's tree without layer_bridge and with the quantized
# add_rms_norm_linear refused (the model's two dispatches: add_rms_norm, then the matvec).
# gx ~ gr: the r37 fusion is the loss; gx ~ gb: the refactors are.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in gb gr gx; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
dec() { timeout 60 /tmp/w/$1 bench --device wgpu:nvidia --shape qwen3-0.6b $2 --decode 128 --prefill 8 2>&1 | grep -E "decode batch|dispatches"; }
for r in 1 2; do for q in q4_k q8_0; do for b in gr gx gb; do echo "=== $b $q decode $(t)"; dec $b "--quant $q"; done; done; done
for b in gr gx gr gx; do echo "=== $b bf16 decode $(t)"; dec $b "--dtype bf16"; done
echo "=== done $(t)"
