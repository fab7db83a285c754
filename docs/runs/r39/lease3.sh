#!/usr/bin/env bash
# r39 lease 3 (carry .gl): the float matvec (every variant) without wgpu's runtime checks (g2)
# against the same tree with it checked (g0w); both warm up until steady. Then g2's parity.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
for b in g0w g2 g2ops; do xz -dc .gl/$b.xz > /tmp/w/$b && chmod +x /tmp/w/$b; done
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
dec() { local b=$1 s=$2; shift 2; echo "=== $b $s $* $(t)"; timeout 60 /tmp/w/$b bench --device wgpu:nvidia --shape $s "$@" --decode 128 --prefill 8 2>&1 | grep -E "decode batch"; }
for r in 1 2 3; do dec g0w qwen3-0.6b --dtype bf16; dec g2 qwen3-0.6b --dtype bf16; done
dec g0w qwen3.5-0.8b --dtype bf16; dec g2 qwen3.5-0.8b --dtype bf16
echo "=== g2ops linear[ $(t)"; timeout 60 /tmp/w/g2ops "linear[" --skip ::hip --skip ::cuda --skip ::cpu 2>&1 | grep -E "panicked|FAIL|^[0-9]+ passed" | tail -4
echo "=== g2ops add_rms_norm_linear $(t)"; timeout 40 /tmp/w/g2ops add_rms_norm_linear --skip ::hip --skip ::cuda --skip ::cpu 2>&1 | grep -E "panicked|FAIL|^[0-9]+ passed" | tail -4
echo "=== done $(t)"
