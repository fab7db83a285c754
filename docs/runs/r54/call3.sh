#!/usr/bin/env bash
# r54 call 3, right after call2.sh on the same warm machine (carry [".gl", ".peer"]): our rows and
# llama.cpp's through tools/bench/vs-llamacpp.sh with g1 (main at fdcacd3, unpacked by call 2).
export XDG_RUNTIME_DIR=/tmp; for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
WGLLM=/tmp/w/g1 OUT=$OUT/vs timeout 540 bash tools/bench/vs-llamacpp.sh bench 2>&1 | tee $OUT/call3.log | grep -E "^\||RESULT|rror" | tail -40
