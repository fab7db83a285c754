//! What the harness's cases do not reach on llvmpipe: the workgroup-memory reduction where
//! subgroups exist, other workgroup shapes, x at an odd 16-bit offset and w at a block offset;
//! each against the CPU reference. And the contract's shape error.
use super::launch::{build_body, launch_linear, QNorm, XIn};
use super::plan::{has_v4, matvec_plan};
use super::*;
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::op::TensorDesc;
use crate::parity::case::{input, Init};
use crate::parity::compare::{compare, tolerance};

fn check(
    b: &WgpuBackend,
    kind: Kind,
    shape: Option<(u32, u32)>,
    (xd, wd): (DType, DType),
    (m, k, n): (usize, usize, usize),
    (xo, wo): (usize, usize),
) {
    check_kc(b, kind, shape, None, (xd, wd), (m, k, n), (xo, wo));
}

fn check_kc(
    b: &WgpuBackend,
    kind: Kind,
    shape: Option<(u32, u32)>,
    kc: Option<usize>,
    (xd, wd): (DType, DType),
    (m, k, n): (usize, usize, usize),
    (xo, wo): (usize, usize),
) {
    let xi = input(
        xd,
        &[m, k],
        Init::Normal {
            seed: (m * 31 + k) as u64,
            std: 1.0,
        },
    );
    let wi = input(
        wd,
        &[n, k],
        Init::QuantBlocks {
            seed: (k * 13 + n) as u64,
        },
    );
    let cpu = CpuBackend::new();
    let (cx, cw, cy) = (
        cpu.alloc(xd, &[m, k]).unwrap(),
        cpu.alloc(wd, &[n, k]).unwrap(),
        cpu.alloc(DType::F32, &[m, n]).unwrap(),
    );
    cpu.upload(&cx, &xi.bytes()).unwrap();
    cpu.upload(&cw, &wi.bytes()).unwrap();
    cpu.run(&Op::Linear, &[&cx, &cw], &[&cy]).unwrap();
    let want = cpu.download(&cy).unwrap();
    let at = |d: DType, off: usize, shape: &[usize]| {
        b.alloc(d, &[off + shape.iter().product::<usize>() + 64])
            .unwrap()
            .view(off, shape)
            .unwrap()
    };
    let (gx, gw, gy) = (at(xd, xo, &[m, k]), at(wd, wo, &[n, k]), at(DType::F32, 3, &[m, n]));
    b.upload(&gx, &xi.bytes()).unwrap();
    b.upload(&gw, &wi.bytes()).unwrap();
    launch_linear(b, kind, shape, kc, false, &gx, &gw, &gy, None, None).unwrap();
    b.flush().unwrap();
    let got = b.download(&gy).unwrap();
    let r = compare(DType::F32, &got, &want, tolerance("linear", DType::F32));
    assert!(
        r.is_ok(),
        "{kind:?} {shape:?} kc {kc:?} {xd}/{wd} {m}x{k}x{n} +{xo}/+{wo}: {}",
        r.unwrap_err()
    );
}

#[test]
fn forced_variants_match_cpu() {
    let Some(b) = WgpuBackend::all().into_iter().next() else {
        eprintln!("no wgpu adapter: skipped");
        return;
    };
    for wd in DType::QUANTS {
        let qk = wd.block().0;
        // a view past block 0: three blocks, or four of a type whose blocks are not whole words
        // (a view starts at a word-aligned byte)
        let wo = if wd.block().1 % 4 == 0 { 3 * qk } else { 4 * qk };
        for sg in [false, b.caps.subgroup] {
            for shape in [(32, 1), (64, 4), (128, 3), (32, 8), (64, 6)] {
                check(
                    &b,
                    Kind::Matvec {
                        sg,
                        lanes: Lanes::Words,
                    },
                    Some(shape),
                    (DType::F32, wd),
                    (2, 3 * qk, 7),
                    (0, wo),
                );
                if has_v4(wd) {
                    // rows of whole 256-element groups, w 16-byte aligned (a view 256 elements in)
                    check(
                        &b,
                        Kind::Matvec { sg, lanes: Lanes::V4 },
                        Some(shape),
                        (DType::F32, wd),
                        (2, 512, 9),
                        (4, 256),
                    );
                }
                if wd == DType::Q4K {
                    check(
                        &b,
                        Kind::Matvec {
                            sg,
                            lanes: Lanes::Limbs,
                        },
                        Some(shape),
                        (DType::F32, wd),
                        (3, 768, 9),
                        (8, 256),
                    );
                    // x in chunks of 256 elements (three), and whole
                    for kc in [Some(256), None] {
                        check_kc(
                            &b,
                            Kind::Matvec {
                                sg: sg && sg32(&b),
                                lanes: Lanes::LimbsWg,
                            },
                            Some(shape),
                            kc,
                            (DType::F32, wd),
                            (3, 768, 37),
                            (8, 256),
                        );
                    }
                }
            }
        }
        check(
            &b,
            Kind::Matvec {
                sg: false,
                lanes: Lanes::Words,
            },
            None,
            (DType::BF16, wd),
            (1, qk, 5),
            (2, wo),
        );
    }
}

/// add_rms_norm_linear's quantized matvec (x read as rms_norm(a + b, nw), qx_norm.wgsl) in forced
/// shapes, with and without subgroups (the harness's cases run plan.rs's shape with them only on
/// llvmpipe), on the word and vec4 lanes, plain and with the swiglu epilogue, the norm weight
/// 1 + w and w (a kernel of each: the flag is part of its key), bf16 and f32; every operand at
/// element offset 0, then a, b, nw and sum at offsets 4, 8, 12, 16 (16-byte starts: the vec4
/// lanes' 16-byte loads with an f32 nw), then 1, 2, 2, 5 and with nw or sum alone off a 16-byte
/// start (element loads): y and the stored sum against the CPU's composition.
#[test]
fn normed_variants_match_cpu() {
    let Some(b) = WgpuBackend::all().into_iter().next() else {
        eprintln!("no wgpu adapter: skipped");
        return;
    };
    let (m, k, n) = (3, 512, 14);
    let cpu = CpuBackend::new();
    let v4_runs = std::cell::Cell::new(0);
    for wd in [DType::Q4K, DType::Q4_1] {
        for (swiglu, unit, nwd) in [
            (false, true, DType::BF16),
            (true, true, DType::BF16),
            (false, false, DType::BF16),
            (false, false, DType::F32),
            (true, true, DType::F32),
        ] {
            let op = Op::AddRmsNormLinear {
                eps: 1e-5,
                unit_offset: unit,
                swiglu,
            };
            let ins = [
                input(DType::F32, &[m, k], Init::Normal { seed: 1, std: 1.0 }),
                input(DType::F32, &[m, k], Init::Normal { seed: 2, std: 0.5 }),
                input(nwd, &[k], Init::Normal { seed: 3, std: 0.3 }),
                input(wd, &[n, k], Init::QuantBlocks { seed: 4 }),
            ];
            let ny = if swiglu { n / 2 } else { n };
            let shapes: [(DType, &[usize]); 2] = [(DType::F32, &[m, k]), (DType::F32, &[m, ny])];
            // element offsets of a, b, nw, w, sum, y
            let run = |dev: &dyn Backend, offs: [usize; 6], launch: &dyn Fn(&[&Tensor], &[&Tensor])| -> Vec<Vec<u8>> {
                let at = |d: DType, off: usize, shape: &[usize]| {
                    dev.alloc(d, &[off + shape.iter().product::<usize>()])
                        .unwrap()
                        .view(off, shape)
                        .unwrap()
                };
                let i: Vec<Tensor> = ins
                    .iter()
                    .zip(offs)
                    .map(|(t, off)| {
                        let x = at(t.desc.dtype, off, &t.desc.shape);
                        dev.upload(&x, &t.bytes()).unwrap();
                        x
                    })
                    .collect();
                let o: Vec<Tensor> = shapes
                    .iter()
                    .zip(&offs[4..])
                    .map(|((d, s), &off)| at(*d, off, s))
                    .collect();
                launch(&i.iter().collect::<Vec<_>>(), &o.iter().collect::<Vec<_>>());
                o.iter().map(|t| dev.download(t).unwrap()).collect()
            };
            let want = run(&cpu, [0; 6], &|i, o| cpu.run(&op, i, o).unwrap());
            let mut lanes = vec![Lanes::Words];
            if has_v4(wd) {
                lanes.push(Lanes::V4);
            }
            for sg in [false, b.caps.subgroup] {
                for &l in &lanes {
                    for shape in [(32, 2), (64, 4), (128, 6)] {
                        for offs in [
                            [0; 6],
                            [4, 8, 12, 0, 16, 3],
                            [1, 2, 2, 0, 5, 3],
                            [4, 8, 2, 0, 16, 3],
                            [4, 8, 12, 0, 18, 3],
                        ] {
                            let kind = Kind::Matvec { sg, lanes: l };
                            let got = run(&b, offs, &|i, o| {
                                let norm = QNorm {
                                    eps: 1e-5,
                                    unit_offset: unit,
                                    nw: i[2],
                                    add: Some((i[1], o[0])),
                                };
                                // the 16-byte loads exactly where the lanes, dtypes and offsets allow them
                                let v4 = l == Lanes::V4
                                    && nwd == DType::F32
                                    && [0, 1, 2, 4].iter().all(|&j| offs[j] % 4 == 0);
                                assert_eq!(matches!(norm.xin(l, i[0]), XIn::NormV4 { .. }), v4, "{offs:?}");
                                v4_runs.set(v4_runs.get() + v4 as usize);
                                launch_linear(&b, kind, Some(shape), None, swiglu, i[0], i[3], o[1], Some(&norm), None)
                                    .unwrap();
                                b.flush().unwrap();
                            });
                            for (j, what) in ["sum", "y"].iter().enumerate() {
                                let r = compare(DType::F32, &got[j], &want[j], tolerance("linear", DType::F32));
                                assert!(
                                    r.is_ok(),
                                    "{wd} {kind:?} {shape:?} swiglu {swiglu} 1 + w {unit} nw {nwd} offsets {offs:?}: {what}: {}",
                                    r.unwrap_err()
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(v4_runs.get() > 0);
}

/// The pre-pass limb lanes' own plans (matvec_plan: 3 rows a 32-thread workgroup; four slots a
/// trip in a wider one), each at a size that picks it, rows not a multiple of 3 included.
#[test]
fn limb_plans_match_cpu() {
    let Some(b) = WgpuBackend::all().into_iter().next() else {
        eprintln!("no wgpu adapter: skipped");
        return;
    };
    for ((k, n), plan) in [((2048, 12800), (32, 3, 2)), ((8192, 2048), (256, 4, 4))] {
        assert_eq!(matvec_plan(n, k, Lanes::Limbs), plan);
        check(
            &b,
            Kind::Matvec {
                sg: b.caps.subgroup,
                lanes: Lanes::Limbs,
            },
            None,
            (DType::F32, DType::Q4K),
            (1, k, n),
            (0, 0),
        );
    }
}

/// The limb entries' WGSL, subgroup forms included (lavapipe never compiles those: its
/// subgroups are not 32 wide), validated by naga with every capability.
#[test]
fn limb_entries_validate() {
    use super::super::kernel::{generate, validate_wgsl};
    let consts: Vec<(&str, String)> = [
        ("X_KIND", "0u"),
        ("X_ALIGNED", "true"),
        ("WG", "256u"),
        ("R", "8u"),
        ("U", "2u"),
        ("KC", "1024u"),
        // qmatvec's swiglu epilogue (qmatvec_xs has none and leaves it unread)
        ("SWIGLU_OUT", "true"),
    ]
    .iter()
    .map(|(a, b)| (*a, b.to_string()))
    .collect();
    for (kind, entry) in [
        (
            Kind::Matvec {
                sg: true,
                lanes: Lanes::LimbsWg,
            },
            "qmatvec_xs",
        ),
        (
            Kind::Matvec {
                sg: false,
                lanes: Lanes::LimbsWg,
            },
            "qmatvec_xs",
        ),
        (
            Kind::Matvec {
                sg: true,
                lanes: Lanes::Limbs,
            },
            "qmatvec",
        ),
    ] {
        let bindings = vec![
            if kind
                == (Kind::Matvec {
                    sg: true,
                    lanes: Lanes::Limbs,
                })
            {
                read4("x", DType::U32)
            } else {
                read4("x", DType::F32)
            },
            read4("w", DType::Q4K),
            write("y", DType::F32),
        ];
        let key = KernelKey {
            entry,
            bindings,
            variant: String::new(),
        };
        let body = build_body(
            &crate::backend::wgpu::shaders::embedded,
            kind,
            DType::Q4K,
            XIn::Given,
            false,
        );
        let src = generate(&key, &body, &consts, &[]);
        validate_wgsl(entry, &src).unwrap();
    }
}

#[test]
fn k_must_be_whole_blocks() {
    let d = OpDesc::new(
        Op::Linear,
        vec![
            TensorDesc::new(DType::F32, &[1, 100]),
            TensorDesc::new(DType::Q4K, &[3, 100]),
        ],
        vec![TensorDesc::new(DType::F32, &[1, 3])],
    );
    let e = d.check().unwrap_err().to_string();
    assert!(e.contains("q4_k") && e.contains("K = 100"), "{e}");
    let d = OpDesc::new(
        Op::Softmax,
        vec![TensorDesc::new(DType::Q8_0, &[1, 32])],
        vec![TensorDesc::new(DType::F32, &[1, 32])],
    );
    assert!(d.check().is_err());
}
