#!/usr/bin/env bash
# r52's check of the landed binary (carry [".gl"]: loader .debs, g1.xz = this commit's
# `cargo build --release --features hip,cuda --bin wgllm`): its lone attention takes the `sg`
# variant on an NVIDIA GPU (subgroups of 32 >= CK); the fused attention's parity there, then a
# tooth for the sg path alone (its denominator's butterfly one level short: half the keys).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
mkdir -p /tmp/w; xz -dc .gl/g1.xz > /tmp/w/g1; chmod +x /tmp/w/g1
rm -rf /tmp/sgtooth; cp -r shaders /tmp/sgtooth
python3 - <<'PY'
f = '/tmp/sgtooth/paged_attention_lone.wgsl'
s = open(f).read()
a = "        var l = select(0.0, l_share[it], item < G * CK);\n        for (var d = CK / 2u;"
assert s.count(a) == 1
open(f, 'w').write(s.replace(a, "        var l = select(0.0, l_share[it], item < G * CK);\n        for (var d = CK / 4u;"))
PY
for f in rms_norm_rope_kv_attention paged_gated_attention; do
  echo "=== g1 parity $f"; timeout 60 /tmp/w/g1 parity --device wgpu:nvidia --filter $f 2>&1 | grep -E "FAIL|passed" | cut -c1-160 | tail -3
done
echo "=== g1 with the sg tooth"; WGLLM_SHADER_DIR=/tmp/sgtooth timeout 60 /tmp/w/g1 parity --device wgpu:nvidia --filter rms_norm_rope_kv_attention 2>&1 | grep -E "FAIL|passed" | cut -c1-160 | tail -3
echo "=== g1 decode"; timeout 40 /tmp/w/g1 bench --device wgpu:nvidia --shape qwen3-0.6b --decode 128 2>&1 | grep -E "decode batch|dispatches"
