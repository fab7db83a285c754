#!/usr/bin/env bash
# Where a lone decode step's attention (paged_attention_lone with the rope prologue, ~14-17 us a
# layer profiled on an H100 against ~6 us for a trivial kernel) spends its time. From the
# repository root with carry [".gl"]: .gl holds the loader .debs, g0.xz (main: `cargo build
# --release --features hip,cuda --bin wgllm`, xz'd) and abl.tar.xz (`python3 mkabl.py; tar cJf
# .gl/abl.tar.xz -C /tmp abl`): copies of shaders/, each read through WGLLM_SHADER_DIR, with the
# kernel cut or changed at one point (wrong results, timing only; mkabl.py says each):
#   empty     returns at once (the launch floor)      front   after step 1's loads
#   finish    after the key/value loads and the prologue    loop    after the key loop
#   noserial  the serial max / sum loops one iteration long   single  no combine (decode 128)
#   fnlocal   key and value rows in function-local arrays   noload  no key/value loads
#   notable   key j at pool row j, the block table not read
# r40 (BENCHMARKS) timed whole parts at decode 128: the combine ~3 us a layer, the prologue
# ~1.5 us, the arithmetic ~0, the rest 'load round trips and barriers'; the cut points here
# split that rest. Written in r51, not run there (no device machine came in that session).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; xz -dc .gl/g0.xz > /tmp/w/g0; chmod +x /tmp/w/g0; tar xJf .gl/abl.tar.xz -C /tmp
nvidia-smi -L
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s]"; }
g() { [ $(( $(date +%s) - T0 )) -lt ${MAXS:-540} ] || { echo "=== out of time $(t)"; exit 0; }; }
for d in 8 128; do
  vs="builtin empty finish loop fnlocal notable noload front noserial"
  [ $d = 128 ] && vs="builtin single fnlocal notable noload"
  for v in $vs; do
    g; echo "=== $v --decode $d $(t)"
    if [ $v = builtin ]; then unset WGLLM_SHADER_DIR; else export WGLLM_SHADER_DIR=/tmp/abl/$v; fi
    timeout 100 /tmp/w/g0 bench --device wgpu:nvidia --shape qwen3-0.6b --decode $d --prefill 16 --profile 2>&1 | grep -E "decode batch|paged_attention_lone|dispatches/step|rror" | head -5
  done
done
unset WGLLM_SHADER_DIR
g; echo "=== g0 gate $(t)"; timeout 100 /tmp/w/g0 gate --device wgpu:nvidia 2>&1 | grep -E "FAIL|passed" | cut -c1-160 | tail -4
echo "=== done $(t)"
