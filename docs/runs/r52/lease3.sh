#!/usr/bin/env bash
# r52's measuring call, right after lease2.sh on the same warm machine (carry [".gl", ".peer"]):
# main's kernel (base) against lease2's fastest (/tmp/best) in wall time, alternated, then the
# whole vs-llamacpp table with /tmp/best's shaders (WGLLM_SHADER_DIR) beside llama.cpp.
set -u
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
export XDG_RUNTIME_DIR=/tmp
echo "=== best: $(cat /tmp/best/NAME)"
BINS="g0@/tmp/var/base g0@/tmp/best" tools/bench/ab.sh 2 "--shape qwen3-0.6b --decode 128" \
  "--shape qwen3-0.6b --quant q4_k --decode 128" 2>&1 | grep -E "^===|decode batch|dispatches"
echo "=== vs-llamacpp bench with g0 + /tmp/best $(t)"
WGLLM_SHADER_DIR=/tmp/best WGLLM=/tmp/w/g0 OUT=$OUT/vs timeout $(( 590 - $(date +%s) + T0 )) bash tools/bench/vs-llamacpp.sh bench 2>&1 | grep -E "^\||RESULT|ours|rror" | tail -40
echo "=== done $(t)"
