#!/usr/bin/env bash
# wgllm binaries (or one binary with shader copies) timed against each other in one command on the
# GPU machine, alternated round by round: figures of two GPU machines, or of two calls far apart,
# differ by more than most changes do, so an A/B is only read within one such run.
#
#   BINS="gA gB" tools/bench/ab.sh ROUNDS "BENCH ARGS" ["BENCH ARGS" ...]
#
# Each name in BINS is a binary: .gl/NAME.xz (built here with `cargo build --release`, compressed
# with xz and carried with .gl, which the device tool's `carry` takes), else a path. NAME@DIR runs
# it with WGLLM_SHADER_DIR=DIR (a patched copy of shaders/: a kernel variant without a rebuild).
# Every round runs every BENCH ARGS line with every binary in turn; a line's output is its
# `=== name args` header and the bench's decode / batch lines. DEV (default wgpu:nvidia) is the
# device. Run from the repository root; where .gl/ holds the Vulkan loader's packages
# (../shared/tools/vulkan-loader-for-gpu-machine.sh), they are unpacked first.
set -uo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:?usage: BINS=\"a b\" tools/bench/ab.sh ROUNDS \"BENCH ARGS\" ...}"
shift
[ $# -gt 0 ] || { echo "no bench arguments given" >&2; exit 2; }
[ -n "${BINS:-}" ] || { echo "BINS names no binary" >&2; exit 2; }
DEV="${DEV:-wgpu:nvidia}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

if ls .gl/*.deb >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done
    ldconfig
fi

work=$(mktemp -d)
declare -A path
for spec in $BINS; do
    name="${spec%%@*}"
    [ -n "${path[$name]:-}" ] && continue
    if [ -f ".gl/$name.xz" ]; then
        xz -dc ".gl/$name.xz" >"$work/$name" && chmod +x "$work/$name" || exit 1
        path[$name]="$work/$name"
    elif [ -x "$name" ]; then
        path[$name]="$name"
    else
        echo "no binary $name (neither .gl/$name.xz nor an executable path)" >&2
        exit 2
    fi
done

start=$(date +%s)
for r in $(seq "$rounds"); do
    for args in "$@"; do
        for spec in $BINS; do
            name="${spec%%@*}"
            dir=""
            [ "$spec" != "$name" ] && dir="${spec#*@}"
            echo "=== $spec $args [round $r, $(($(date +%s) - start)) s]"
            # shellcheck disable=SC2086 # each line is the bench's own word list
            env ${dir:+WGLLM_SHADER_DIR=$dir} timeout "${LIMIT_S:-120}" "${path[$name]}" bench --device "$DEV" $args 2>&1 |
                grep -E "decode batch|batch +[0-9]+:|prefill [0-9]+:|GB/s|error" || echo "   (no figure: see the command above)"
        done
    done
done
rm -rf "$work"
