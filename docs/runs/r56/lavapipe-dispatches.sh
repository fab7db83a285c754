#!/usr/bin/env bash
# r56: a Qwen3-0.6B-shaped decode step's dispatches by weight type on lavapipe, before and after
# quantized views past block 0 (Tensor::view). Lavapipe cannot bind the 0.6B q8_0 embedding
# (165 MB > its 128 MiB), so this shrinks the shape in place to 2 layers and a 32,000-token
# vocabulary (src/model/shapes.rs), builds, profiles one step of each type, then puts the file back.
# "before" also puts back the old rule (a view of 34-, 18- or 210-byte blocks only at block 0).
# From the repository root of a clean checkout: bash docs/runs/r56/lavapipe-dispatches.sh
set -eu
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
git diff --quiet -- src/model/shapes.rs src/tensor.rs || { echo "shapes.rs / tensor.rs have local changes"; exit 2; }
trap 'git checkout -- src/model/shapes.rs src/tensor.rs' EXIT
sed -i '0,/vocab_size: 151_936,/s//vocab_size: 32_000,/; 0,/num_hidden_layers: 28,/s//num_hidden_layers: 2,/' src/model/shapes.rs
for when in after before; do
  if [ $when = before ]; then
    sed -i 's|(off % be != 0 \|\| off / be \* bb % 4 != 0)|(off % be != 0 \|\| bb % 4 != 0 \&\& off > 0)|' src/tensor.rs
    grep -q "bb % 4 != 0 && off > 0" src/tensor.rs
  fi
  cargo build --release --bin wgllm 2>&1 | tail -1
  for q in q8_0 q4_0 q6_k q4_k; do
    echo "=== $when $q"
    ./target/release/wgllm bench --shape qwen3-0.6b --quant $q --device wgpu --decode 2 --prefill 4 --profile 2>&1 |
      awk '/dispatches\/step/ {print} /decode step: wall/ {d = 1} /prefill [0-9]+: wall/ {d = 0} d'
  done
done
