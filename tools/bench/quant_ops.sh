#!/usr/bin/env bash
# The quantized matvec roofline on one device: op bench (weight bytes counted as stored; GPU time
# of back-to-back dispatches, and the kernel time from timestamp queries where the adapter has
# them) for the decode shapes that matter (Llama-8B- and 70B-class, Qwen3's lm_head and 0.6B
# FFN), beside the bf16 matvec measured in the same run, and a plain read of the same bytes
# (the probe's kernels, same copies, back to back: what launch and tail leave at that size).
# Usage: tools/bench/quant_ops.sh BIN DEVICE [TYPES] (REPS=n repeats each measurement)
bin=$1; dev=$2; types=${3:-"q4_k q8_0 q4_1 q6_k q4_0 iq4_nl bf16"}
for dt in $types; do
  for s in "1 4096 14336" "1 14336 4096" "1 8192 28672" "1 28672 8192" "1 1024 151936" "1 1024 3072" "1 3072 1024"; do
    set -- $s
    for _ in $(seq ${REPS:-1}); do
      o=$($bin bench --op linear --dtype $dt --m $1 --k $2 --n $3 --device "$dev" 2>&1)
      printf "%-7s M%s K%-6s N%-7s %s | %s | kernel %s | plain read %s\n" $dt $1 $2 $3 "$(echo "$o" | grep -E "us per op,|error" | head -1 | sed 's/^ *//')" \
        "$(echo "$o" | grep -oE "[0-9.]+ GB/s -> [0-9.]+% of it")" "$(echo "$o" | grep -oE "alone.*" | grep -oE "[0-9.]+ us per op.*")" \
        "$(echo "$o" | grep -oE "back to back\): .*" | sed 's/back to back): //')"
    done
  done
done
