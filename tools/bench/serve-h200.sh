#!/usr/bin/env bash
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
# Issue 18 on a GPU machine: `wgllm serve` with a random-weight Qwen3-0.6B-shaped model directory
# (tools/bench/shaped_model.py: bf16, WordLevel tokenizer, Qwen3's chat template), loaded by
# tools/bench/serve_load.py at 1, 16 and 64 concurrent streaming requests; then SIGTERM, which must
# end the server with exit status 0. Writes $OUT/serve-load.json (serve_load.py's figures plus the
# server's exit status) and $OUT/serve-h200.log ($OUT/server.log: the server's stderr).
#
#   OUT=... bash tools/bench/serve-h200.sh      (run from the repository root, .gl/ beside it)
#
# Environment (defaults for the H200 run; a local test overrides them):
#   WGLLM_BIN (.gl/bin/wgllm)  WGLLM_DEVICE (wgpu:nvidia)  PORT (8123)  MODEL_DIR (/tmp/q06)
#   SHAPE_ARGS ("": the full shape; e.g. "--layers 2 --hidden 256 --vocab 4096")
#   STREAMS (1,16,64)  SECS (45 per level)  MAX_TOKENS (128)  PROMPT_LENS (16..512)
#   KV_MEMORY (6GiB: 64 streams x (512 + 128) tokens x 112 KiB (f16 K+V of 28 layers x 8 heads x 128)
#   = 4.4 GiB fits, so the figures are not those of preemption, which the default 2GiB would bring;
#   and each layer's K or V pool, 6 GiB / 56 = 110 MiB, stays under a 128 MiB storage-binding limit
#   should the adapter have one: the engine caps a larger pool at what the device binds, at load)
#   SERVE_ARGS (extra `wgllm serve` flags)
# Runtime on the H200: model written ~20 s, loaded ~10 s, 3 levels x (45 s + the last requests),
# about 3 minutes in all.
set -uo pipefail
: "${OUT:?set OUT to the results folder}"
BIN=${WGLLM_BIN:-.gl/bin/wgllm}
DEV=${WGLLM_DEVICE:-wgpu:nvidia}
PORT=${PORT:-8123}
MODEL_DIR=${MODEL_DIR:-/tmp/q06}
SHAPE_ARGS=${SHAPE_ARGS:-}
STREAMS=${STREAMS:-1,16,64}
SECS=${SECS:-45}
MAX_TOKENS=${MAX_TOKENS:-128}
PROMPT_LENS=${PROMPT_LENS:-16..512}
KV_MEMORY=${KV_MEMORY:-6GiB}
SERVE_ARGS=${SERVE_ARGS:-}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
log=$OUT/serve-h200.log
exec > >(tee -a "$log") 2>&1

say() { echo "== $(date +%T) $*"; }
t0=$(date +%s)
say "binary $BIN, device $DEV"
"$BIN" devices 2>&1 | head -n 20
command -v nvidia-smi > /dev/null && nvidia-smi -L

say "model: shaped_model.py --out $MODEL_DIR $SHAPE_ARGS"
# shellcheck disable=SC2086  # SHAPE_ARGS is a list of flags
python3 "$HERE/shaped_model.py" --out "$MODEL_DIR" $SHAPE_ARGS || { say "FAILED: shaped_model.py"; exit 1; }
# the word-level tokenizer knows t0..t{vocab-5}: one token a word
words=t$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['vocab_size'] - 4)" "$MODEL_DIR/config.json")

say "serve: $BIN serve --model $MODEL_DIR --device $DEV --port $PORT --kv-memory $KV_MEMORY $SERVE_ARGS"
# shellcheck disable=SC2086
"$BIN" serve --model "$MODEL_DIR" --device "$DEV" --port "$PORT" --kv-memory "$KV_MEMORY" $SERVE_ARGS \
  > "$OUT/server.log" 2>&1 &
pid=$!
ready=0
for _ in $(seq 1 600); do
  if ! kill -0 "$pid" 2> /dev/null; then
    say "FAILED: the server exited before it was ready"; cat "$OUT/server.log"; exit 1
  fi
  if python3 -c "import sys,urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2).status != 200)" 2> /dev/null; then
    ready=1; break
  fi
  sleep 0.5
done
[ $ready = 1 ] || { say "FAILED: /health not 200 after 300 s"; cat "$OUT/server.log"; kill -KILL "$pid"; exit 1; }
say "ready after $(($(date +%s) - t0)) s"; cat "$OUT/server.log"

say "load: streams $STREAMS, $SECS s each, max_tokens $MAX_TOKENS, prompts $PROMPT_LENS words ($words)"
python3 "$HERE/serve_load.py" --url "http://127.0.0.1:$PORT" --streams "$STREAMS" --secs "$SECS" \
  --max-tokens "$MAX_TOKENS" --prompt-lens "$PROMPT_LENS" --words "$words" --endpoint completions \
  --json "$OUT/serve-load.json"
load_rc=$?

say "SIGTERM"
kill -TERM "$pid"
# the grace period is 30 s; nothing is in flight by now, so the exit is quick
for _ in $(seq 1 120); do kill -0 "$pid" 2> /dev/null || break; sleep 0.5; done
if kill -0 "$pid" 2> /dev/null; then
  say "FAILED: still running 60 s after SIGTERM"; kill -KILL "$pid"; srv_rc=killed
else
  wait "$pid"; srv_rc=$?
fi
tail -n 3 "$OUT/server.log"
say "server exit status $srv_rc (want 0), serve_load.py exit status $load_rc (want 0)"
if [ -f "$OUT/serve-load.json" ]; then
  python3 - "$OUT/serve-load.json" "$srv_rc" "$DEV" "$SHAPE_ARGS" << 'EOF'
import json, sys
p, rc, dev, shape = sys.argv[1:5]
d = json.load(open(p))
d["server_exit_status"] = int(rc) if rc.isdigit() else rc
d["device"], d["shape_args"] = dev, shape or "qwen3-0.6b (full)"
json.dump(d, open(p, "w"), indent=2)
EOF
fi
say "done in $(($(date +%s) - t0)) s"
[ "$srv_rc" = 0 ] && [ "$load_rc" = 0 ]
