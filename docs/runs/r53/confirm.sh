#!/usr/bin/env bash
# r53's third call, on the machine sweep.sh left warm (carry [".gl"]): the two best classes of
# sweep.log against x0's default, alternated, three rounds (x0 = main + exp-shape.patch).
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp; mkdir -p /tmp/w; [ -x /tmp/w/x0 ] || { xz -dc .gl/x0.xz > /tmp/w/x0; chmod +x /tmp/w/x0; }
for r in 1 2 3; do for c in "" fs=32x4 fs=32x4,fn=32x4; do printf "bf16 %-18s" "${c:-default}"; WGLLM_EXP="$c" timeout 60 /tmp/w/x0 bench --shape qwen3-0.6b --device wgpu:nvidia --decode 128 --prefill 16 2>&1 | grep "decode batch" | cut -c1-70; done; for c in "" qs=32x6; do printf "q4_k %-18s" "${c:-default}"; WGLLM_EXP="$c" timeout 60 /tmp/w/x0 bench --shape qwen3-0.6b --quant q4_k --device wgpu:nvidia --decode 128 --prefill 16 2>&1 | grep "decode batch" | cut -c1-70; done; done 2>&1 | tee $OUT/confirm.log
