#!/usr/bin/env bash
# Where a lone decode step's attention (paged_attention_lone with the rope prologue, ~14-17 us a
# layer profiled on an H100 against ~6 us for a trivial kernel) spends its time: g0 alone, then
# g0@copy for each copy, through tools/bench/ab.sh. From the repository root with carry [".gl"]:
# .gl holds the loader .debs, g0.xz (main: `cargo build --release --features hip,cuda --bin
# wgllm`, xz'd) and abl.tar.xz (`python3 mkabl.py; tar cJf
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
tar xJf .gl/abl.tar.xz -C /tmp
nvidia-smi -L
v() { for x in "$@"; do printf 'g0@/tmp/abl/%s ' "$x"; done; }
BINS="g0 $(v empty finish loop fnlocal notable noload front noserial)" \
  tools/bench/ab.sh 1 "--shape qwen3-0.6b --decode 8 --prefill 16 --profile"
BINS="g0 $(v single fnlocal notable noload)" \
  tools/bench/ab.sh 1 "--shape qwen3-0.6b --decode 128 --prefill 16 --profile"
