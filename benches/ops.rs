//! Criterion benches per op family and wgpu device. Each reports GB/s (bytes an op must move) or
//! GFLOP/s (GEMM, shown by criterion as "elem/s" of flops); the `bandwidth` group measures the
//! device's plain read bandwidth in the same run, the roofline the others are read against.
//!
//!   cargo bench --bench ops                 # every device
//!   WGLLM_BENCH_DEVICE=nvidia cargo bench   # adapters whose name contains "nvidia"
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::{Duration, Instant};
use wgllm::backend::wgpu::WgpuBackend;
use wgllm::backend::Backend;
use wgllm::dtype::DType;
use wgllm::op::{rope_tables, Op, TensorDesc};
use wgllm::parity::case::{input, Case, Init};
use wgllm::tensor::Tensor;

struct Bench {
    group: &'static str,
    case: Case,
    throughput: Throughput,
}

fn normal(dt: DType, shape: &[usize]) -> wgllm::parity::case::Input {
    input(dt, shape, Init::Normal { seed: 1, std: 1.0 })
}

fn benches() -> Vec<Bench> {
    let mut v = Vec::new();
    let bytes = |n: usize| Throughput::Bytes(n as u64);
    // Decode matvecs of a Qwen3-0.6B layer (hidden 1024, ffn 3072) and the vocab head.
    for (k, n) in [(1024usize, 3072usize), (3072, 1024), (1024, 151936)] {
        for wdt in [DType::F32, DType::BF16] {
            let case = Case::new(
                "linear",
                &format!("matvec,w{wdt},N{n}"),
                Op::Linear,
                vec![normal(DType::F32, &[1, k]), normal(wdt, &[n, k])],
                vec![TensorDesc::new(DType::F32, &[1, n])],
            );
            v.push(Bench {
                group: "linear",
                case,
                throughput: bytes(n * k * wdt.size()),
            });
        }
    }
    // Prefill (512 rows)
    let (m, k, n) = (512usize, 1024usize, 3072usize);
    let case = Case::new(
        "linear",
        "m512,wbf16",
        Op::Linear,
        vec![normal(DType::F32, &[m, k]), normal(DType::BF16, &[n, k])],
        vec![TensorDesc::new(DType::F32, &[m, n])],
    );
    v.push(Bench {
        group: "linear",
        case,
        throughput: Throughput::Elements((2 * m * k * n) as u64),
    });
    for rows in [1usize, 512] {
        let case = Case::new(
            "rms_norm",
            "f32",
            Op::RmsNorm {
                eps: 1e-6,
                unit_offset: false,
            },
            vec![normal(DType::F32, &[rows, 1024]), normal(DType::F32, &[1024])],
            vec![TensorDesc::new(DType::F32, &[rows, 1024])],
        );
        v.push(Bench {
            group: "rms_norm",
            case,
            throughput: bytes(2 * rows * 1024 * 4),
        });
    }
    for kv_len in [512usize, 4096] {
        let (hq, hkv, dh) = (16, 8, 128);
        let case = Case::new(
            "attention",
            &format!("decode,kv{kv_len}"),
            Op::Attention {
                n_past: kv_len - 1,
                scale: 0.088,
            },
            vec![
                normal(DType::F32, &[1, hq, dh]),
                normal(DType::BF16, &[kv_len, hkv, dh]),
                normal(DType::BF16, &[kv_len, hkv, dh]),
            ],
            vec![TensorDesc::new(DType::F32, &[1, hq, dh])],
        );
        v.push(Bench {
            group: "attention",
            case,
            throughput: bytes(2 * kv_len * hkv * dh * 2),
        });
    }
    let n = 3072 * 64;
    v.push(Bench {
        group: "elementwise",
        case: Case::new(
            "swiglu",
            "f32",
            Op::SwiGlu,
            vec![normal(DType::F32, &[n]), normal(DType::F32, &[n])],
            vec![TensorDesc::new(DType::F32, &[n])],
        ),
        throughput: bytes(3 * n * 4),
    });
    v.push(Bench {
        group: "elementwise",
        case: Case::new(
            "add",
            "f32",
            Op::Add,
            vec![normal(DType::F32, &[n]), normal(DType::F32, &[n])],
            vec![TensorDesc::new(DType::F32, &[n])],
        ),
        throughput: bytes(3 * n * 4),
    });
    v.push(Bench {
        group: "elementwise",
        case: Case::new(
            "cast",
            "f32->bf16",
            Op::Cast,
            vec![normal(DType::F32, &[n])],
            vec![TensorDesc::new(DType::BF16, &[n])],
        ),
        throughput: bytes(n * 6),
    });
    let (cos, sin) = rope_tables(1e6, 128, 4096);
    let case = Case::new(
        "rope",
        "f32,prefill512",
        Op::Rope { rotary_dim: 128 },
        vec![
            normal(DType::F32, &[512, 16, 128]),
            input(DType::U32, &[512], Init::U32s((0..512).collect())),
            input(DType::F32, &[4096, 64], Init::Values(cos)),
            input(DType::F32, &[4096, 64], Init::Values(sin)),
        ],
        vec![TensorDesc::new(DType::F32, &[512, 16, 128])],
    );
    v.push(Bench {
        group: "rope",
        case,
        throughput: bytes(2 * 512 * 16 * 128 * 4),
    });
    let vocab = 151936;
    for (fam, op, outs) in [
        ("softmax", Op::Softmax, vec![TensorDesc::new(DType::F32, &[1, vocab])]),
        ("argmax", Op::Argmax, vec![TensorDesc::new(DType::U32, &[1])]),
        (
            "topk",
            Op::TopK { k: 40 },
            vec![
                TensorDesc::new(DType::F32, &[1, 40]),
                TensorDesc::new(DType::U32, &[1, 40]),
            ],
        ),
    ] {
        v.push(Bench {
            group: "sampling",
            case: Case::new(fam, "f32", op, vec![normal(DType::F32, &[1, vocab])], outs),
            throughput: bytes(vocab * 4),
        });
    }
    let case = Case::new(
        "embedding",
        "bf16->f32",
        Op::Embedding,
        vec![
            normal(DType::BF16, &[151936, 1024]),
            input(DType::U32, &[512], Init::Ids { seed: 2, max: 151936 }),
        ],
        vec![TensorDesc::new(DType::F32, &[512, 1024])],
    );
    v.push(Bench {
        group: "embedding",
        case,
        throughput: bytes(512 * 1024 * 6),
    });
    // Qwen3.5-0.8B's linear attention (16 key / 16 value heads of 128, conv 6144 channels): the
    // decode step moves the f32 state in and out; the chunked prefill is counted in tokens.
    let (nk, nv, dk, dv, cd) = (16usize, 16usize, 128usize, 128usize, 6144usize);
    let state = nv * dk * dv;
    let gdn_in = |t: usize| {
        vec![
            normal(DType::F32, &[t, cd]),
            normal(DType::F32, &[t, nv]),
            normal(DType::F32, &[t, nv]),
            normal(DType::BF16, &[nv]),
            normal(DType::BF16, &[nv]),
            input(DType::F32, &[nv, dk, dv], Init::Normal { seed: 3, std: 0.1 }),
        ]
    };
    let gdn_out = |t: usize| {
        vec![
            TensorDesc::new(DType::F32, &[t, nv, dv]),
            TensorDesc::new(DType::F32, &[nv, dk, dv]),
        ]
    };
    debug_assert_eq!(cd, 2 * nk * dk + nv * dv);
    v.push(Bench {
        group: "gdn",
        case: Case::new("gdn_recurrent", "decode,0.8b", Op::GdnRecurrent, gdn_in(1), gdn_out(1)),
        throughput: bytes(2 * state * 4 + cd * 4),
    });
    v.push(Bench {
        group: "gdn",
        case: Case::new(
            "gdn_chunked",
            "prefill512,0.8b",
            Op::GdnChunked,
            gdn_in(512),
            gdn_out(512),
        ),
        throughput: Throughput::Elements(512),
    });
    let case = Case::new(
        "causal_conv1d_update",
        "decode,0.8b",
        Op::CausalConv1dUpdate,
        vec![
            normal(DType::F32, &[1, cd]),
            normal(DType::BF16, &[cd, 4]),
            normal(DType::F32, &[3, cd]),
        ],
        vec![
            TensorDesc::new(DType::F32, &[1, cd]),
            TensorDesc::new(DType::F32, &[3, cd]),
        ],
    );
    v.push(Bench {
        group: "gdn",
        case,
        throughput: bytes(cd * (4 + 8 + 4 + 24)),
    });
    // Qwen3.5-0.8B's gated full attention at decode (8 q / 2 kv heads of 256, rotary 64)
    for kv_len in [512usize, 4096] {
        let (hq, hkv, dh) = (8, 2, 256);
        let (cos, sin) = rope_tables(1e7, 64, kv_len);
        let case = Case::new(
            "gated_attention",
            &format!("decode,kv{kv_len}"),
            Op::GatedAttention {
                n_past: kv_len - 1,
                scale: 0.0625,
                eps: 1e-6,
                rotary_dim: 64,
            },
            vec![
                normal(DType::F32, &[1, hq, 2 * dh]),
                normal(DType::F32, &[1, hkv, dh]),
                normal(DType::F32, &[1, hkv, dh]),
                normal(DType::BF16, &[dh]),
                normal(DType::BF16, &[dh]),
                input(DType::F32, &[kv_len, 32], Init::Values(cos)),
                input(DType::F32, &[kv_len, 32], Init::Values(sin)),
            ],
            vec![
                TensorDesc::new(DType::F32, &[1, hq, dh]),
                TensorDesc::new(DType::F32, &[kv_len, hkv, dh]),
                TensorDesc::new(DType::F32, &[kv_len, hkv, dh]),
            ],
        );
        v.push(Bench {
            group: "attention",
            case,
            throughput: bytes(2 * kv_len * hkv * dh * 4),
        });
    }
    v
}

fn run_all(c: &mut Criterion) {
    let want = std::env::var("WGLLM_BENCH_DEVICE")
        .unwrap_or_default()
        .to_ascii_lowercase();
    for dev in WgpuBackend::all() {
        if !dev.name().contains(&want) {
            continue;
        }
        let bw_bytes = (256usize << 20).min(dev.caps.max_binding as usize);
        {
            let mut g = c.benchmark_group(format!("bandwidth/{}", dev.name()));
            g.throughput(Throughput::Bytes(bw_bytes as u64))
                .sample_size(10)
                .measurement_time(Duration::from_secs(2));
            g.bench_function("read_sweep", |b| {
                b.iter_custom(|iters| {
                    let gbs = dev.read_bandwidth(bw_bytes, iters as usize).expect("bandwidth probe");
                    Duration::from_secs_f64(bw_bytes as f64 * iters as f64 / gbs)
                })
            });
            g.finish();
        }
        for bench in benches() {
            let desc = bench.case.desc();
            if let wgllm::Support::No(r) = dev.supports(&desc) {
                eprintln!("skip {} on {}: unsupported: {r}", bench.case.id, dev.name());
                continue;
            }
            let ins: Vec<Tensor> = bench
                .case
                .inputs
                .iter()
                .map(|i| {
                    let t = dev.alloc(i.desc.dtype, &i.desc.shape).unwrap();
                    dev.upload(&t, &i.bytes()).unwrap();
                    t
                })
                .collect();
            let outs: Vec<Tensor> = bench
                .case
                .outputs
                .iter()
                .map(|d| dev.alloc(d.dtype, &d.shape).unwrap())
                .collect();
            let (ir, or): (Vec<&Tensor>, Vec<&Tensor>) = (ins.iter().collect(), outs.iter().collect());
            let mut g = c.benchmark_group(format!("{}/{}", bench.group, dev.name()));
            g.throughput(bench.throughput.clone())
                .sample_size(10)
                .measurement_time(Duration::from_secs(2));
            g.bench_function(&bench.case.id, |b| {
                b.iter_custom(|iters| {
                    dev.wait().unwrap();
                    let t0 = Instant::now();
                    for _ in 0..iters {
                        dev.run(&bench.case.op, &ir, &or).unwrap();
                    }
                    dev.wait().unwrap();
                    t0.elapsed()
                })
            });
            g.finish();
        }
    }
}

criterion_group!(ops, run_all);
criterion_main!(ops);
