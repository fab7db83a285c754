#!/usr/bin/env bash
# r54 call 4, the same warm machine (carry [".gl"]): g1's prefill 512 and 2048 again, three times,
# after call 3's noisy prefill 512 row.
export XDG_RUNTIME_DIR=/tmp; for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
for r in 1 2 3; do timeout 60 /tmp/w/g1 bench --shape qwen3-0.6b --device wgpu:nvidia --dtype bf16 --decode 16 --prefill 512,2048 2>&1 | grep -E "prefill|decode batch" | cut -c1-120; done 2>&1 | tee $OUT/call4.log
