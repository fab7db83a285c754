//! The plans `record` does not pick for the harness's shapes on llvmpipe (the workgroup-memory
//! reduction where subgroups exist, 128x128 tiles, other R / MR), and tensors at nonzero
//! offsets, each against the CPU reference.
use super::*;
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::parity::case::{input, Init};
use crate::parity::compare::{compare, tolerance};

fn check(
    b: &WgpuBackend,
    plan: Plan,
    (xd, wd, yd): (DType, DType, DType),
    (m, k, n): (usize, usize, usize),
    off: usize,
) {
    let xi = input(
        xd,
        &[m, k],
        Init::Normal {
            seed: (m * 31 + k * 7 + n) as u64,
            std: 1.0,
        },
    );
    let wi = input(
        wd,
        &[n, k],
        Init::Normal {
            seed: (k * 13 + n) as u64,
            std: 1.0 / (k as f32).sqrt(),
        },
    );
    let cpu = CpuBackend::new();
    let (cx, cw, cy) = (
        cpu.alloc(xd, &[m, k]).unwrap(),
        cpu.alloc(wd, &[n, k]).unwrap(),
        cpu.alloc(yd, &[m, n]).unwrap(),
    );
    cpu.upload(&cx, &xi.bytes()).unwrap();
    cpu.upload(&cw, &wi.bytes()).unwrap();
    cpu.run(&Op::Linear, &[&cx, &cw], &[&cy]).unwrap();
    let want = cpu.download(&cy).unwrap();
    let at = |d: DType, shape: &[usize]| {
        let whole = b.alloc(d, &[off + shape.iter().product::<usize>() + 2]).unwrap();
        whole.view(off, shape).unwrap()
    };
    let (gx, gw, gy) = (at(xd, &[m, k]), at(wd, &[n, k]), at(yd, &[m, n]));
    b.upload(&gx, &xi.bytes()).unwrap();
    b.upload(&gw, &wi.bytes()).unwrap();
    launch(b, plan, &[&gx, &gw], &[&gy], false, None, None).unwrap();
    b.flush().unwrap();
    let got = b.download(&gy).unwrap();
    let r = compare(yd, &got, &want, tolerance("linear", yd));
    assert!(
        r.is_ok(),
        "{plan:?} {xd}/{wd}/{yd} {m}x{k}x{n} +{off}: {}",
        r.unwrap_err()
    );
}

#[test]
fn forced_plans_match_cpu() {
    let Some(b) = WgpuBackend::all().into_iter().next() else {
        eprintln!("no wgpu adapter: skipped");
        return;
    };
    use DType::*;
    let dts = [(F32, BF16, F32), (F16, F16, F16), (BF16, F32, BF16)];
    let mut plans = vec![];
    for sg in [false, true] {
        if sg && !b.caps.subgroup {
            continue;
        }
        for (wg, r, mr, u) in [
            (64, 1, 1, 4),
            (256, 4, 1, 2),
            (64, 8, 1, 1),
            (128, 2, 3, 3),
            (64, 1, 8, 2),
            (64, 3, 16, 4),
            (64, 8, 16, 4),
        ] {
            plans.push((Plan::Matvec { wg, r, mr, u, sg }, mr as usize));
        }
    }
    for (plan, mr) in plans {
        for dt in dts {
            for (k, n) in [(7, 5), (4097, 13), (300, 131)] {
                // m: one chunk of the plan's rows (also at an offset), and a ragged last chunk.
                check(&b, plan, dt, (mr, k, n), 0);
                check(&b, plan, dt, (mr, k, n), 6);
                check(&b, plan, dt, (2 * mr + 1, k, n), 2);
            }
        }
    }
}

/// `body` with `key`'s binding prelude through naga: parsed, validated, written as SPIR-V.
fn to_spirv(key: &KernelKey, body: &str, consts: &[(&'static str, String)]) {
    use crate::backend::wgpu::context::kernel_source_with;
    use crate::backend::wgpu::shaders::embedded;
    let src = kernel_source_with(embedded("common.wgsl"), key, body, consts);
    let label = key.label();
    let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(&src)));
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(&src)));
    let opts = naga::back::spv::Options {
        lang_version: (1, 6),
        ..Default::default()
    };
    let pipe = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: key.entry.into(),
    };
    naga::back::spv::write_vec(&module, &info, &opts, Some(&pipe)).unwrap_or_else(|e| panic!("{label}: {e:?}"));
}

/// Every coop candidate's full WGSL (both W dtypes, aligned and scalar loaders) on 16x16 matrices
/// in subgroups of 32 (NVIDIA) and 8x8 ones in subgroups of 8 (lavapipe) or 32 (Apple) through
/// naga: parsed, validated and written as SPIR-V. Bookworm's lavapipe has no cooperative matrices:
/// this is what it can check; CI runs the 8x8 kernels on Mesa 26's lavapipe (.ci/run) and
/// linear::sweep the 16x16 ones on a GPU that has them.
#[test]
fn coop_kernels_compile_to_spirv() {
    use crate::backend::wgpu::shaders::embedded;
    let mut n = 0;
    let every = [(16, 32), (8, 8), (8, 32)];
    let all = every.iter().flat_map(|&(t, l)| coop::CANDIDATES.map(|c| c.on(t, l)));
    for c in all {
        assert!(c.valid(), "{c:?}");
        assert!(
            c.shared_bytes() <= 48 << 10,
            "{}: {} bytes of workgroup memory",
            c.variant(),
            c.shared_bytes()
        );
        for wd in [DType::BF16, DType::F16] {
            for (aligned, swiglu) in [(true, false), (false, false), (true, true)] {
                let (key, consts) = coop::spec(c, wd, aligned, swiglu);
                let body = coop::coop_body(embedded("linear_coop.wgsl"), c, aligned, swiglu);
                to_spirv(&key, &body, &consts);
                n += 1;
            }
        }
    }
    assert_eq!(n, coop::CANDIDATES.len() * 6 * every.len());
    // a quantized W (coop_quant.rs: the GEMM shape, every type file, x aligned or not)
    let every_quant = [
        DType::Q8_0,
        DType::Q4_0,
        DType::IQ4NL,
        DType::Q4_1,
        DType::Q4K,
        DType::Q6K,
    ];
    for (t, l) in every {
        let c = COOP_GEMM.on(t, l);
        for wd in every_quant {
            for aligned in [true, false] {
                let (key, consts) = coop::spec(c, wd, aligned, false);
                let (ty, extra) = crate::backend::wgpu::quant::type_src(wd);
                let prefix = format!("{}\n{extra}{}\n", embedded("qcommon.wgsl"), embedded(ty));
                let src = embedded("linear_coop.wgsl");
                let body = coop::coop_body_of(src, c, aligned, false, coop::WSrc::Quant { prefix: &prefix });
                to_spirv(&key, &body, &consts);
            }
        }
    }
    // the split-K second pass, plain and swiglu, at the fewest and most splits of Qwen3-0.6B
    for (swiglu, s) in [(false, 2), (true, 4), (false, 12)] {
        let key = KernelKey {
            entry: "linear_splitk",
            bindings: vec![read("x", DType::F32), write("y", DType::F32)],
            variant: String::new(),
        };
        let consts = [("WG", "128u".to_string()), ("SWIGLU", swiglu.to_string())];
        let body = fill(embedded("linear_splitk.wgsl"), &[("sum", split_sum(s))]);
        to_spirv(&key, &body, &consts);
    }
}

/// A coop kernel is taken only for f32 x and y with 16-bit weights where the device runs it: with
/// batch invariance off from COOP_FROM rows, under ManyRows at every M (one K split for the
/// family), under FewRows never.
#[test]
fn coop_only_from_coop_from_with_its_dtypes_and_by_invariance() {
    use crate::dtype::DType::*;
    use BatchInvariance::*;
    assert!(takes_coop(COOP_FROM, coop_dtypes(F32, BF16, F32), Off, true));
    assert!(takes_coop(2048, coop_dtypes(F32, F16, F32), Off, true));
    assert!(!takes_coop(COOP_FROM - 1, true, Off, true));
    assert!(!takes_coop(2048, true, Off, false));
    for m in [1, 7, COOP_FROM, 2048] {
        assert!(!takes_coop(m, true, FewRows, true));
        assert!(takes_coop(m, true, ManyRows, true));
        assert!(!takes_coop(m, true, ManyRows, false));
    }
    for (x, w, y) in [(F32, F32, F32), (BF16, BF16, F32), (F32, BF16, F16), (F32, Q4K, F32)] {
        for mode in [Off, FewRows, ManyRows] {
            assert!(!takes_coop(2048, coop_dtypes(x, w, y), mode, true), "{x} {w} {y}");
        }
    }
    // a weight matrix (K, N) sees one K split (KS, KC) at every M in the many-rows family (the same bits a
    // row whatever M is), and every shape of the family is swept and picked somewhere
    let ms = [1, 7, 31, 32, 63, 64, 127, 128, 4096];
    let mut picked = std::collections::HashSet::new();
    for k in [64, 2047, 2048, 9000] {
        for n in [1, coop::VOCAB_N - 1, coop::VOCAB_N, 151936] {
            let c1 = coop::many_rows(1, n);
            for m in ms {
                let c = coop::many_rows(m, n);
                assert_eq!((c.ks, c.kc), (c1.ks, c1.kc), "K {k} N {n}: M {m} takes {c:?}");
                picked.insert(c);
            }
        }
    }
    for c in coop::MANY_ROWS {
        assert!(c.valid() && coop::CANDIDATES.contains(&c), "{c:?} is not swept");
        assert!(picked.contains(&c), "{c:?} is never picked");
    }
    // lavapipe has no cooperative matrices: the matvec under every mode
    let Some(b) = WgpuBackend::all().into_iter().next() else {
        return;
    };
    for mode in [FewRows, ManyRows, Off] {
        b.set_batch_invariant(mode);
        let coop = b.caps.cooperative_matrix;
        let p = plan(&b, 2048, 1024, 1024, true);
        assert_eq!(matches!(p, Plan::Coop(_)), coop && mode != FewRows, "{mode:?}: {p:?}");
    }
}
