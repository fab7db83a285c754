# Run from the repository root: /tmp/ablq/<variant>/ = shaders/ with the quantized matvec cut or
# changed at one point (wrong results, timing only), for docs/runs/r54/ablate_q.sh. Where a lone
# q4_k decode step's qmatvec (~7 us real a dispatch on an H100 against < 1 us of its weights'
# bytes) spends its time. `p.n != 0xffffffffu` is always true at run time but not known to the
# compiler, so what follows an early return still compiles, and each early return keeps its loads
# alive by a store the run never takes.
#   empty     qmatvec returns at once (the launch floor)
#   nonorm    the norm variant's x is a alone (no b, no norm weight, no sum store)
#   nox       no x loads: each slot's x is made from its index
#   now       no weight loads: each slot's words are made from its index
#   noreduce  no subgroup / workgroup reduction: each thread stores its own first sum
#   xsempty   qmatvec_xs (the o / down projections) returns at once
import shutil
src = 'shaders'
out = '/tmp/ablq'
shutil.rmtree(out, ignore_errors=True)
def read(f):
    return open(f'{src}/{f}').read()
def variant(name, **files):
    d = f'{out}/{name}'
    shutil.copytree(src, d)
    for f, text in files.items():
        open(f'{d}/{f.replace("__", ".")}', 'w').write(text)
def rep(s, a, b, n=1):
    assert s.count(a) == n, (a, s.count(a))
    return s.replace(a, b)
ESC = 'p.n != 0xffffffffu'
qm = read('qmatvec.wgsl')
qn = read('qx_norm.wgsl')
v4 = read('q4_k_v4.wgsl')
xs = read('qmatvec_xs.wgsl')
variant('v0')
variant('empty', qmatvec__wgsl=rep(qm, "    let n0 = (g % nb) * R;\n",
    "    if (%s) { return; }\n    let n0 = (g %% nb) * R;\n" % ESC))
variant('nonorm', qx_norm__wgsl=rep(qn, "    let t = a4(e) + b4(e);\n    if (sum_row) {\n        put_sum(e, t);\n    }\n",
    "    let t = a4(e);\n"))
variant('nox', q4_k_v4__wgsl=rep(v4, "    var x: X;\n    x.l0 = xv(e);",
    "    var x: X;\n    if (%s) {\n        let f = vec4<f32>(f32(e & 255u));\n        x.l0 = f; x.l1 = f; x.l2 = f; x.l3 = f; x.h0 = f; x.h1 = f; x.h2 = f; x.h3 = f;\n        x.sl = f.x; x.sh = f.y;\n        return x;\n    }\n    x.l0 = xv(e);" % ESC))
variant('now', q4_k_v4__wgsl=rep(v4, "    let hd = w_v4[a];\n    let q = w_v4[a + 1u + j];\n",
    "    let hd = vec4<u32>(a, a + 1u, a + 2u, 0x3c003c00u);\n    let q = vec4<u32>(a, j, a ^ j, a + j);\n"))
v = rep(qm, "#ifdef_sg\n    for (var r = 0u; r < NSUMS; r++) {",
    "    if (%s) {\n        let cols = select(p.n, p.n / 2u, SWIGLU_OUT);\n        st_y(mi * cols + (n0 + lid) %% cols, sums[0]);\n        return;\n    }\n#ifdef_sg\n    for (var r = 0u; r < NSUMS; r++) {" % ESC)
variant('noreduce', qmatvec__wgsl=v)
entry = xs[xs.index('@compute'):]
first_let = entry.index('    let ')
variant('xsempty', qmatvec_xs__wgsl=xs[:xs.index('@compute') + first_let] + "    if (%s) { return; }\n" % ESC + xs[xs.index('@compute') + first_let:])
print('variants in', out)
