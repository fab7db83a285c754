#!/usr/bin/env bash
# the peer lease: two calls, carry [".gl", ".peer"]; wgllm-new.xz = f8a5054 built with --features hip,cuda
# call 1 (505 s):
OUT=$OUT bash tools/bench/vs-llamacpp.sh build 2>&1 | tail -25
# call 2 (242 s):
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp; mkdir -p /tmp/w; xz -dc .gl/wgllm-new.xz > /tmp/w/wgllm; chmod +x /tmp/w/wgllm; WGLLM=/tmp/w/wgllm OUT=$OUT/vs timeout 560 bash tools/bench/vs-llamacpp.sh bench 2>&1 | grep -vE "^\s+--|TIMING" | tail -60
