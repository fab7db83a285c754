#!/usr/bin/env bash
# Issue 6 on a GPU machine: parity of every case (quant ones included) on the wgpu adapter, the
# quantized matvec roofline (op bench, quantized bytes counted), and decode of the qwen3-0.6b shape
# with q4_k / q8_0 weights. Usage: tools/bench/quant_h200.sh BIN DEVICE OUTDIR
set -uo pipefail
bin=$1; dev=$2; out=$3
$bin devices > "$out/devices.txt" 2>&1
$bin parity --device "$dev" --json "$out/parity.json" > "$out/parity.log" 2>&1; tail -n 1 "$out/parity.log"
grep -E "FAIL" "$out/parity.log" | head -20
for dt in q4_k q8_0 q4_1 q6_k bf16; do
  for s in "1 1024 3072" "1 3072 1024" "1 1024 151936" "1 4096 14336" "1 576 49152"; do
    set -- $s
    echo "== op linear $dt m=$1 k=$2 n=$3"
    $bin bench --op linear --dtype $dt --m $1 --k $2 --n $3 --device "$dev" 2>&1 | tail -n 3
  done
done
for q in q4_k q8_0; do
  echo "== shape qwen3-0.6b --quant $q"
  $bin bench --shape qwen3-0.6b --quant $q --device "$dev" --decode 128 --prefill 512 --json "$out/bench-qwen3-0.6b-$q.json" 2>&1 | tail -n 8
done
