# r32 lease 1 (H200): the llama.cpp peer pair beside our bench at da5992e (binary .gl/gh.xz)
# call 1:
OUT=/tmp/vs bash tools/bench/vs-llamacpp.sh build
# call 2, right after:
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w $OUT/vs; xz -dc .gl/gh.xz > /tmp/w/gh; chmod +x /tmp/w/gh
WGLLM=/tmp/w/gh OUT=$OUT/vs bash tools/bench/vs-llamacpp.sh bench > $OUT/bench.log 2>&1
