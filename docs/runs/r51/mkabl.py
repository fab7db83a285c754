# Run from the repository root: /tmp/abl/<variant>/ = shaders/ with paged_attention_lone.wgsl (or
# its rope prologue) cut or changed at one point, for docs/runs/r51/ablate.sh. `p.pk != ~0` is
# always true at run time but not known to the compiler, so what follows an early return still
# compiles, and each early return keeps its loads alive by a store the run never takes.
import shutil
src = 'shaders'
out = '/tmp/abl'
shutil.rmtree(out, ignore_errors=True)
base = open(f'{src}/paged_attention_lone.wgsl').read()
rope = open(f'{src}/paged_attention_lone_rope.wgsl').read()
def variant(name, lone=None, rp=None):
    d = f'{out}/{name}'
    shutil.copytree(src, d)
    if lone is not None:
        open(f'{d}/paged_attention_lone.wgsl', 'w').write(lone)
    if rp is not None:
        open(f'{d}/paged_attention_lone_rope.wgsl', 'w').write(rp)
def rep(s, a, b, n=1):
    assert s.count(a) == n, (a, s.count(a))
    return s.replace(a, b)
ESC = 'p.pk != 0xffffffffu'
variant('v0')
variant('empty', rep(base, "    let part = idx % p.np;\n", "    if (%s) { return; }\n    let part = idx %% p.np;\n" % ESC))
variant('front', rep(base, "    let sq = workgroupUniformLoad(&seq_w);\n",
  "    let sq = workgroupUniformLoad(&seq_w);\n    if (%s) { if (sq.x == 777u && prow_s[tid %% CK] == 3u && dot(raw_s[tid], raw_s[tid]) == 5.0 && wv[0].x == 2.0) { st_o(0u, 1.0); } return; }\n" % ESC))
variant('finish', rep(base, "    finish(tid, g, part);\n    var acc",
  "    finish(tid, g, part);\n    if (%s) { if (dot(q_s[tid %% (G * DH4)], kr[0] + vr[0]) == 5.0 && new_k_s[tid %% DH4].x == 3.0) { st_o(0u, 1.0); } return; }\n    var acc" % ESC))
variant('loop', rep(base, "    // 6. the denominators",
  "    if (%s) { if (dot(acc[0], acc[G - 1u]) + l_share[0] == 5.0) { st_o(0u, 1.0); } return; }\n    // 6. the denominators" % ESC))
v = rep(base, "for (var j = 0u; j < CK; j++) {\n                mx", "for (var j = 0u; j < 1u; j++) {\n                mx")
v = rep(v, "for (var j = 0u; j < CK; j++) {\n                l +=", "for (var j = 0u; j < 1u; j++) {\n                l +=")
variant('noserial', v, rep(rope, "for (var c = 0u; c < DH4; c++)", "for (var c = 0u; c < 1u; c++)"))
variant('single', rep(base, "let single = nv == 1u;", "let single = true;"))
# kr / vr as function-local arrays passed by pointer instead of module-scope private
v = base
v = rep(v, "var<private> kr: array<vec4<f32>, NV>;\nvar<private> vr: array<vec4<f32>, KR>;\n", "")
v = rep(v, "fn load_chunk(tid: u32, cnt: u32, kbase: u32) {", "fn load_chunk(tid: u32, cnt: u32, kbase: u32, kr: ptr<function, array<vec4<f32>, NV>>, vr: ptr<function, array<vec4<f32>, KR>>) {")
v = rep(v, "fn take_new(tid: u32, cnt: u32) {", "fn take_new(tid: u32, cnt: u32, kr: ptr<function, array<vec4<f32>, NV>>, vr: ptr<function, array<vec4<f32>, KR>>) {")
v = rep(v, "        kr[i] = k;", "        (*kr)[i] = k;")
v = rep(v, "        vr[i] = v;", "        (*vr)[i] = v;")
v = rep(v, "            kr[i] = new_k_s[lane + i * L];", "            (*kr)[i] = new_k_s[lane + i * L];")
v = rep(v, "            vr[i] = new_v_s[c4];", "            (*vr)[i] = new_v_s[c4];")
v = rep(v, "    load_chunk(tid, min(CK, k1 - k0), kbase);", "    var kr: array<vec4<f32>, NV>;\n    var vr: array<vec4<f32>, KR>;\n    load_chunk(tid, min(CK, k1 - k0), kbase, &kr, &vr);")
v = rep(v, "            load_chunk(tid, cnt, kbase);", "            load_chunk(tid, cnt, kbase, &kr, &vr);")
v = rep(v, "        take_new(tid, cnt);", "        take_new(tid, cnt, &kr, &vr);")
variant('fnlocal', v)
v = rep(base, "k = ld4_kp(kp_row * (p.hkv * p.dh) + kbase + (lane + i * L) * 4u);", "k = vec4<f32>(f32(kp_row + i));")
v = rep(v, "v = ld4_vp(vrow * (p.hkv * p.dh) + kbase + c4 * 4u);", "v = vec4<f32>(f32(vrow + i));")
variant('noload', v)
# the block table not read: key j at pool row j (the lone engine's tables are the identity, so
# right there; timing only): what the table's round trip before the key loads costs
v = rep(base, "pr = pool_row(k0 + tid);", "pr = k0 + tid;")
v = rep(v, "pr = pool_row(c0 + tid);", "pr = c0 + tid;")
variant('notable', v)
