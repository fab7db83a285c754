#!/usr/bin/env bash
# r55 call C, right after callB.sh on the same warm machine (carry [".gl"]; /tmp/ablq from call A):
# the wall-time A/B of call 1's step 2 again with no build on the CPUs: g0 against g0@single.
export XDG_RUNTIME_DIR=/tmp
BINS="g0 g0@/tmp/ablq/single" timeout 300 tools/bench/ab.sh 2 "--shape qwen3-0.6b --decode 128 --prefill 16" \
  "--shape qwen3-0.6b --quant q4_k --decode 128 --prefill 16" 2>&1 | grep -E "^===|decode" | tee $OUT/callC.log
