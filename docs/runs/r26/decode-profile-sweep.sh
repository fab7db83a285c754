#!/usr/bin/env bash
# lease A: M=1 matvec sweep with GPU in-chain times; decode profiles of both shapes
# (lib = the lib test binary: cargo test --release --features hip,cuda --lib --no-run, stripped)
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w /work && ln -sfn $PWD /work/main
for b in wgllm lib; do xz -dc .gl/$b.xz > /tmp/w/$b; chmod +x /tmp/w/$b; done
W=/tmp/w/wgllm; D=wgpu:nvidia
{
echo "# $(cat .gl/rev) on the H200"; which nsys ncu nv-nsight-cu-cli 2>&1 | head -3
echo "=== qwen3 decode profile"; timeout 60 $W bench --shape qwen3-0.6b --device $D --decode 128 --profile 2>&1 | grep -vE "^\s*$" | head -40
echo "=== qwen3.5 decode profile"; timeout 60 $W bench --shape qwen3.5-0.8b --device $D --decode 128 --profile 2>&1 | grep -vE "^\s*$" | head -40
echo "=== sweep m1"; WGLLM_BENCH_DEVICE=nvidia WGLLM_LINEAR_SWEEP=m1 timeout 200 /tmp/w/lib linear::sweep --ignored --nocapture 2>&1 | grep -v "^  coop\|nmse" | head -150
} > $OUT/a.log 2>&1; cat $OUT/a.log
