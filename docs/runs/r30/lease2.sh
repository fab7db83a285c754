#!/usr/bin/env bash
# r30 lease 2 (H200), carry [".gl"]: where Qwen3.5's lone gated attention kernel (ga.xz, 37 us a
# layer) spends its time. Shader copies patched through WGLLM_SHADER_DIR (timing only; outputs
# wrong): nocomb (no combine: each partition writes its own output), prolog (return after the
# prologue's finish), loads (return after the first chunk's loads, before finish), cheapfin
# (finish copies the raw query: no norm, RoPE or cache write).
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig; export XDG_RUNTIME_DIR=/tmp
R=$PWD; mkdir -p /tmp/w /work && ln -sfn $R /work/main
xz -dc .gl/ga.xz > /tmp/w/ga && chmod +x /tmp/w/ga
mk() { rm -rf /tmp/s_$1 && cp -r shaders /tmp/s_$1; }
mk base
mk nocomb; sed -i 's/let single = nv == 1u;/let single = true;/' /tmp/s_nocomb/paged_attention_lone.wgsl
mk prolog; python3 - <<'PY'
p='/tmp/s_prolog/paged_attention_lone.wgsl'; s=open(p).read()
s=s.replace("    load_chunk(tid, min(CK, k1 - k0), kbase);\n    finish(tid, g, part);\n","    load_chunk(tid, min(CK, k1 - k0), kbase);\n    finish(tid, g, part);\n    if (p.np > 0u) { if (tid < DH4) { put_out(orow, 0u, tid, q_s[tid] + kr[0] + vr[0]); } return; }\n",1)
open(p,'w').write(s)
PY
mk loads; python3 - <<'PY'
p='/tmp/s_loads/paged_attention_lone.wgsl'; s=open(p).read()
s=s.replace("    load_chunk(tid, min(CK, k1 - k0), kbase);\n    finish(tid, g, part);\n","    load_chunk(tid, min(CK, k1 - k0), kbase);\n    if (p.np > 0u) { if (tid < DH4) { put_out(orow, 0u, tid, kr[0] + vr[0] + raw_s[tid]); } return; }\n    finish(tid, g, part);\n",1)
open(p,'w').write(s)
PY
mk cheapfin; python3 - <<'PY'
p='/tmp/s_cheapfin/paged_attention_lone_rope.wgsl'; s=open(p).read()
s=s.replace("fn finish(tid: u32, g: u32, part: u32) {","fn finish(tid: u32, g: u32, part: u32) {\n    workgroupBarrier();\n    for (var i = tid; i < G * DH4; i += NT) { q_s[i] = raw_s[i]; }\n    workgroupBarrier();\n    if (p.np > 0u) { return; }",1)
open(p,'w').write(s)
PY
for v in base nocomb prolog loads cheapfin base; do
  echo "=== $v: $(WGLLM_SHADER_DIR=/tmp/s_$v /tmp/w/ga bench --device wgpu:nvidia --shape qwen3.5-0.8b --decode 64 --prefill 16 --profile 2>&1 | grep -E 'paged_attention_lone|CPU time' | head -2 | tr -s ' ' | tr '\n' ' ')"
done
echo "=== qwen3 base: $(/tmp/w/ga bench --device wgpu:nvidia --shape qwen3-0.6b --decode 64 --prefill 16 --profile 2>&1 | grep -E 'paged_attention_lone' | head -1 | tr -s ' ')"
