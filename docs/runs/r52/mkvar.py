# Run from the repository root after the step-6 / four-lane edit of shaders/: /tmp/var/<name>/ =
# shaders/ with paged_attention_lone.wgsl as it was (base: git show HEAD, b039168 when it ran), as
# edited (out1), and out1 with subgroup shuffles for each head's running max and denominator (sg:
# assumes the subgroup holds CK consecutive invocations, as on NVIDIA; the landed kernel takes it
# only there: paged_attention_lone.rs takes_sg).
import shutil, subprocess
out = '/tmp/var'
shutil.rmtree(out, ignore_errors=True)
def rep(s, a, b):
    assert s.count(a) == 1, (a, s.count(a))
    return s.replace(a, b)
def variant(name, files):
    d = f'{out}/{name}'
    shutil.copytree('shaders', d)
    for f, t in files.items():
        open(f'{d}/{f}', 'w').write(t)
L = 'paged_attention_lone.wgsl'
R = 'paged_attention_lone_rope.wgsl'
head = lambda f: subprocess.run(['git', 'show', f'HEAD:shaders/{f}'], capture_output=True, text=True, check=True).stdout
variant('base', {L: head(L), R: head(R)})
variant('out1', {})
s = open(f'shaders/{L}').read()
a = s[s.index("        for (var it = 0u; it < ITEMS; it++) {\n            let item = tid + it * NT;\n            if (item < G * CK) {\n                let j = item % CK;"):s.index("        // 5. P.V")]
b = '''        for (var it = 0u; it < ITEMS; it++) {
            let item = tid + it * NT;
            var s = NEG;
            if (item < G * CK) {
                let j = item % CK;
                if (j < cnt) {
                    let at = (j * G + item / CK) * LQ;
                    let v = part_s[at];
                    s = (v.x + v.y) + (v.z + v.w);
                    for (var q = 1u; q < LQ; q++) {
                        let w = part_s[at + q];
                        s += (w.x + w.y) + (w.z + w.w);
                    }
                }
            }
            var mx = s;
            for (var d = CK / 2u; d > 0u; d >>= 1u) {
                mx = max(mx, subgroupShuffleXor(mx, d));
            }
            if (item < G * CK) {
                let hh = item / CK;
                let m_old = m_run[it];
                let m_new = max(m_old, mx);
                let al = exp(m_old - m_new);
                let pj = select(0.0, exp(s - m_new), item % CK < cnt);
                l_share[it] = l_share[it] * al + pj;
                m_run[it] = m_new;
                sc_s[item] = pj;
                if (item % CK == 0u) {
                    m_s[hh] = m_new;
                    al_s[hh] = al;
                }
            }
        }
        workgroupBarrier();
'''
s = s.replace(a, b)
s = rep(s, "    var l_share: array<f32, ITEMS>;   // their shares of their heads' denominators\n",
        "    var l_share: array<f32, ITEMS>;   // their shares of their heads' denominators\n    var m_run: array<f32, ITEMS>;\n    for (var it = 0u; it < ITEMS; it++) {\n        m_run[it] = NEG;\n    }\n")
s = rep(s, '''        if (item < G * CK) {
            sc_s[item] = l_share[it];
        }
    }
''', '''        var l = select(0.0, l_share[it], item < G * CK);
        for (var d = CK / 2u; d > 0u; d >>= 1u) {
            l += subgroupShuffleXor(l, d);
        }
        if (item < G * CK && item % CK == 0u) {
            sc_s[item / CK] = l;
        }
    }
''')
s = rep(s, '''        var l4 = vec4<f32>(0.0);
        for (var j = hh * CK; j < hh * CK + CK; j += 4u) {
            l4 += vec4<f32>(sc_s[j], sc_s[j + 1u], sc_s[j + 2u], sc_s[j + 3u]);
        }
        let l = (l4.x + l4.y) + (l4.z + l4.w);
''', '''        let l = sc_s[hh];
''')
assert 'for (var j = 0u; j < CK; j++)' not in s
variant('sg', {L: s})
