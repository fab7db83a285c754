#!/usr/bin/env bash
# r30 lease 3 (H200), carry [".gl"]: the lone attention kernel's fixed cost (ga.xz), shader copies
# through WGLLM_SHADER_DIR (timing only; outputs wrong): empty (return at the kernel's start),
# step1 (return after step 1's loads and the description check), nogate (no gate loads).
# Qwen3.5 (gated prologue) and Qwen3 (stacked-x prologue).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
xz -dc .gl/ga.xz > /tmp/w/ga && chmod +x /tmp/w/ga
mk() { rm -rf /tmp/s_$1 && cp -r shaders /tmp/s_$1; }
mk base
mk empty; python3 - <<'PY'
p='/tmp/s_empty/paged_attention_lone.wgsl'; s=open(p).read()
s=s.replace("    let part = idx % p.np;\n","    if (p.np > 0u) { if (idx == 0u && tid == 0u) { st_o(0u, 1.0); } return; }\n    let part = idx % p.np;\n",1)
open(p,'w').write(s)
PY
mk step1; python3 - <<'PY'
p='/tmp/s_step1/paged_attention_lone.wgsl'; s=open(p).read()
s=s.replace("    if (part >= nv) {\n        return;\n    }\n","    if (part >= nv) {\n        return;\n    }\n    if (p.np > 0u) { if (tid < DH4) { put_out(orow, 0u, tid, q_s[tid] + raw_s[tid] + raw_s[tid + NT] + raw_s[tid + 2u * NT]); } return; }\n",1)
open(p,'w').write(s)
PY
mk nogate; python3 - <<'PY'
p='/tmp/s_nogate/paged_attention_lone_gated.wgsl'; s=open(p).read()
s=s.replace("        gate_s[i] = ld4_e(0u, (g * G + i / DH4) * 2u * p.dh + p.dh + (i % DH4) * 4u);","        gate_s[i] = vec4<f32>(0.0);",1)
open(p,'w').write(s)
PY
for s in qwen3.5-0.8b qwen3-0.6b; do
  for v in base empty step1 nogate base; do
    echo "=== $s $v: $(WGLLM_SHADER_DIR=/tmp/s_$v /tmp/w/ga bench --device wgpu:nvidia --shape $s --decode 64 --prefill 16 --profile 2>&1 | grep -E 'paged_attention_lone' | head -1 | tr -s ' ')"
  done
done
