#!/usr/bin/env bash
# r57 call B, right after callA.sh on the same warm machine (carry [".gl", ".peer"]): our rows and
# llama.cpp's through tools/bench/vs-llamacpp.sh with g2 (unpacked by call A), then our
# Qwen3.5-0.8B bf16 decode (issue 19's third row; llama.cpp's kit has no such model).
export XDG_RUNTIME_DIR=/tmp; for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
[ -x /tmp/w/g2 ] || { mkdir -p /tmp/w; xz -dc .gl/g2.xz > /tmp/w/g2; chmod +x /tmp/w/g2; }
WGLLM=/tmp/w/g2 OUT=$OUT/vs timeout 480 bash tools/bench/vs-llamacpp.sh bench 2>&1 | tee $OUT/callB.log | grep -E "^\||RESULT|rror" | tail -40
/tmp/w/g2 bench --shape qwen3.5-0.8b --device wgpu:nvidia --decode 128 --prefill 16 2>&1 | tee -a $OUT/callB.log | grep -E "decode|device"
