#!/usr/bin/env bash
# Our bench beside llama.cpp's llama-bench and llama-batched-bench on one GPU machine, the same
# random-weight Qwen3-0.6B shape, and one table of ratios (ours / theirs). Our quantized rows
# come twice: our own random weights of one type, and llama.cpp's q8_0 and q4_k_m GGUF files
# themselves (from the build stage's /tmp/lcpp-work/models) read by our GGUF loader.
#
#   tools/bench/vs-llamacpp.sh build        llama.cpp with CUDA and Vulkan, the GGUF models (~7 min)
#   tools/bench/vs-llamacpp.sh bench        ours, then theirs, then the table (~5 min)
#   tools/bench/vs-llamacpp.sh all          build, then bench (one command where a call may run 12 min)
#   tools/bench/vs-llamacpp.sh table [DIR]  the table again from a folder of results
#
# Run from the repository root on the GPU machine. `build` and `bench` are two commands because the
# device tool caps a command at 10 minutes; the builds live in /tmp/lcpp-work while the machine stays
# warm, so run `bench` right after `build`. Needs:
#   .peer/    the llama.cpp kit (bash ../shared/tools/llamacpp-peer/make-kit.sh .peer, here, once)
#   $WGLLM    our binary (default ./target/release/wgllm); built with --features hip,cuda it adds
#             the native column (--device cuda); without CUDA that column says "-"
#   $WGPU     the wgpu device to bench (default wgpu:nvidia)
# Results go to $OUT (default ./vs-llamacpp-out): ours-*.json, the kit's llamacpp_*.json[l] and
# logs, and table.md (also printed); `bench` also packs them all into $OUT.tgz beside it (the
# device tool brings back only a few files of a folder: ask for that one).
set -uo pipefail
cd "$(dirname "$0")/../.."
stage="${1:-all}"
OUT="${OUT:-$PWD/vs-llamacpp-out}"
B="${WGLLM:-./target/release/wgllm}"
WGPU="${WGPU:-wgpu:nvidia}"
mkdir -p "$OUT"

peer() { OUT="$OUT" PACK=0 bash .peer/run.sh "$@"; }

ours() {
    local dev="$1" tag="$2"; shift 2
    echo "=== ours: $dev $tag"
    "$B" bench --device "$dev" "$@" --json "$OUT/ours-${dev%%:*}-$tag.json" 2>&1 |
        grep -E "decode batch|prefill|batch +[0-9]+:|error" || echo "   (failed: see above)"
}

bench() {
    [ -x "$B" ] || { echo "no wgllm binary at $B (set WGLLM)"; exit 2; }
    for dev in "$WGPU" cuda; do
        if [ "$dev" = cuda ] && ! "$B" devices 2>/dev/null | grep -q "^cuda/"; then
            echo "=== ours: no cuda device, the native column stays empty"
            continue
        fi
        ours "$dev" bf16 --shape qwen3-0.6b --dtype bf16 --decode 128 --prefill 512,2048
        ours "$dev" f16 --shape qwen3-0.6b --dtype f16 --decode 128 --prefill 512,2048
        ours "$dev" q8_0 --shape qwen3-0.6b --quant q8_0 --decode 128 --prefill 512
        ours "$dev" q4_k --shape qwen3-0.6b --quant q4_k --decode 128 --prefill 512
    done
    # llama.cpp's own quantized files, read by our GGUF loader: the same bytes on both sides
    # (its q4_k_m keeps attn_v and some ffn_down in q6_k, and the embedding in q6_k; our q4_k
    # rows above quantize every matrix to q4_k)
    for q in q8_0 q4_k_m; do
        local m="${WORK:-/tmp/lcpp-work}/models/qwen3-0.6b-$q.gguf"
        [ -s "$m" ] || { echo "=== ours: no $m (run the build stage first)"; continue; }
        ours "$WGPU" "gguf-$q" --model "$m" --decode 128 --prefill 512
    done
    ours "$WGPU" batched --shape qwen3-0.6b --batch 1,8,32,64 --prompt-len 128 --gen-len 128 --kv-dtype f16
    peer bench-cuda bench-vulkan bench-batched
    table "$OUT"
    tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && echo "all results: $OUT.tgz"
}

table() {
    python3 - "${1:-$OUT}" <<'PY'
import json, glob, os, sys
out = sys.argv[1]

def load(path):
    try:
        return json.load(open(path))
    except Exception:
        return None

def ours(dev, tag, what):
    d = load(os.path.join(out, f"ours-{dev}-{tag}.json"))
    if not d:
        return None
    if what == "tg":
        return d["decode"]["tokens_per_s"]
    for p in d.get("prefill", []):
        if f"pp{p['tokens']}" == what:
            return p["tokens_per_s"]
    return None

def theirs(be, variant, what):
    d = load(os.path.join(out, f"llamacpp_{be}_{variant}.json"))
    for r in d or []:
        t = f"pp{r['n_prompt']}" if r["n_gen"] == 0 else "tg"
        if t == what:
            return r["avg_ts"]
    return None

def batched_ours(n):
    d = load(os.path.join(out, f"ours-{'wgpu'}-batched.json"))
    for r in (d or {}).get("batch", []):
        if r["batch"] == n:
            return r["decode_tokens_per_s"]
    return None

def batched_theirs(be, n):
    try:
        rows = [json.loads(l) for l in open(os.path.join(out, f"llamacpp_batched_{be}.jsonl")) if l.strip()]
    except Exception:
        return None
    for r in rows:
        if r["pl"] == n:
            return r["speed_tg"]
    return None

def f(v):
    return "-" if v is None else f"{v:,.0f}" if v >= 1000 else f"{v:.1f}"

def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"

# (row, our tag, our test, llama.cpp model variant, llama.cpp test)
rows = [
    ("decode bf16", "bf16", "tg", "bf16", "tg"),
    ("decode f16", "f16", "tg", "f16", "tg"),
    ("decode q8_0", "q8_0", "tg", "q8_0", "tg"),
    ("decode q4_k (llama.cpp q4_k_m)", "q4_k", "tg", "q4_k_m", "tg"),
    ("decode q8_0, llama.cpp's GGUF file on both sides", "gguf-q8_0", "tg", "q8_0", "tg"),
    ("decode q4_k_m, llama.cpp's GGUF file on both sides", "gguf-q4_k_m", "tg", "q4_k_m", "tg"),
    ("prefill 2048 bf16 (llama.cpp f16, flash attention)", "bf16", "pp2048", "f16_fa1", "pp2048"),
    ("prefill 512 bf16 (llama.cpp f16, flash attention)", "bf16", "pp512", "f16_fa1", "pp512"),
]
hdr = ["tokens/s", "ours wgpu", "ours cuda", "llama.cpp Vulkan", "llama.cpp CUDA",
       "wgpu / Vulkan", "wgpu / CUDA", "cuda / CUDA"]
lines = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
n = 0
for name, tag, t, var, lt in rows:
    w, c = ours("wgpu", tag, t), ours("cuda", tag, t)
    v, k = theirs("vulkan", var, lt), theirs("cuda", var, lt)
    n += sum(x is not None for x in (w, c, v, k))
    lines.append("| " + " | ".join([name, f(w), f(c), f(v), f(k), ratio(w, v), ratio(w, k), ratio(c, k)]) + " |")
for s in (1, 8, 32, 64):
    w, v, k = batched_ours(s), batched_theirs("vulkan", s), batched_theirs("cuda", s)
    n += sum(x is not None for x in (w, v, k))
    lines.append("| " + " | ".join([f"decode, {s} sequences (S_TG; f16 KV, prompt 128, 128 generated)",
                                     f(w), "-", f(v), f(k), ratio(w, v), ratio(w, k), "-"]) + " |")
txt = "\n".join(lines)
print(txt)
open(os.path.join(out, "table.md"), "w").write(txt + "\n")
if n == 0:
    print("no figures found in " + out)
    sys.exit(1)
PY
}

case "$stage" in
    build) peer deps build-cuda build-vulkan model quantize ;;
    bench) bench ;;
    all) peer deps build-cuda build-vulkan model quantize && bench ;;
    table) table "${2:-$OUT}" ;;
    *) echo "usage: $0 build|bench|all|table [DIR]"; exit 2 ;;
esac
