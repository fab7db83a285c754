#!/usr/bin/env bash
# One command for a ROCm (or CUDA) owner: everything we need back, in one folder.
#   usage: tools/native/report.sh [hip|cuda] [OUT_DIR]      (default: hip, ./native-report-<device>)
# Builds wgllm with both native backends (no ROCm/CUDA needed to build), then runs on that backend:
# devices, the whole parity suite (JSON), the model gates (goldens + anchors), the real SmolLM2 GGUF
# ("The capital of France is" -> Paris), and the decode/prefill bench of the Qwen3-0.6B and
# Qwen3.5-0.8B shapes. Each step's output goes to its own file; a failing step is recorded in
# summary.txt and the script goes on, so one broken kernel does not hide the rest.
set -uo pipefail
cd "$(dirname "$0")/../.."
be="${1:-hip}"
out="${2:-native-report-$be}"
mkdir -p "$out"
sum="$out/summary.txt"
: > "$sum"
step() { # name, command...
  local name="$1"; shift
  echo "== $name: $*" | tee -a "$sum"
  if "$@" > "$out/$name.txt" 2>&1; then echo "   ok" | tee -a "$sum"; else echo "   FAILED (exit $?), see $name.txt" | tee -a "$sum"; fi
  tail -n 3 "$out/$name.txt" | sed 's/^/   | /' | tee -a "$sum"
}
{ git rev-parse HEAD; git status --short | head -20; uname -a; } > "$out/revision.txt" 2>&1
command -v rocminfo >/dev/null && rocminfo > "$out/rocminfo.txt" 2>&1
command -v nvidia-smi >/dev/null && nvidia-smi > "$out/nvidia-smi.txt" 2>&1
bin=./target/release/wgllm
step build cargo build --release --locked --features hip,cuda
step devices "$bin" devices
step parity "$bin" parity --device "$be" --json "$out/parity-$be.json"
step gate "$bin" gate --device "$be"
model="${WGLLM_MODELS:-target/models}/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$model" ] || bash .ci/fetch-models > "$out/fetch-models.txt" 2>&1
step smollm2 "$bin" run --model "$model" --device "$be" --prompt "The capital of France is" -n 8
step bench-qwen3 "$bin" bench --shape qwen3-0.6b --device "$be" --json "$out/bench-qwen3-$be.json"
step bench-qwen3_5 "$bin" bench --shape qwen3.5-0.8b --device "$be" --json "$out/bench-qwen3_5-$be.json"
echo "hand back the folder $out (summary.txt first)" | tee -a "$sum"
