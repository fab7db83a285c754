#!/usr/bin/env bash
# Compiles every hip/*.hip into device-only code objects for each AMD target, with Debian's
# clang-19 + lld-19 and no ROCm installed (-nogpuinc -nogpulib: the kernels use compiler builtins
# only, through wgllm_hip.h). Each file is built three ways: its f32 defaults, every float
# operand bf16, every float operand f16 (copy's raw element 16-bit). A warning or an error fails.
#   usage: hip/compile.sh [OUT_DIR] [ARCH...]     (default: a temp dir; gfx1100 gfx1151)
set -euo pipefail
cd "$(dirname "$0")"
CLANG="${CLANG:-clang-19}"
out="${1:-$(mktemp -d)}"
shift || true
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(gfx1100 gfx1151)
mkdir -p "$out"
all_t() { for t in T_X T_W T_Y T_A T_B T_S T_TABLE T_OUT T_Q T_KV T_O T_Z T_SO T_K T_V T_QN T_KN T_KC T_VC T_WB; do printf -- '-D%s=%s ' "$t" "$1"; done; }
variants=("f32|" "bf16|$(all_t wg_bf16) -DT_E=u16" "f16|$(all_t wg_f16) -DT_E=u16")
n=0
for arch in "${archs[@]}"; do
  for f in *.hip; do
    for v in "${variants[@]}"; do
      tag="${v%%|*}"; defs="${v#*|}"
      # shellcheck disable=SC2086
      "$CLANG" -x hip --cuda-device-only --no-gpu-bundle-output --offload-arch="$arch" -nogpuinc -nogpulib \
        -O3 -Wall -Wextra -Werror $defs -c "$f" -o "$out/${f%.hip}-$tag-$arch.co" || { echo "hip/compile.sh: $f ($tag) failed for $arch" >&2; exit 1; }
      n=$((n + 1))
    done
  done
done
echo "hip/compile.sh: $n code objects ($(ls *.hip | wc -l) files x 3 dtype variants x ${#archs[@]} archs: ${archs[*]}) in $out"
