//! Row invariance of `linear` under each batch-invariant family of kernels (the serving engine
//! turns one on): a row of y = x Wᵀ is the same bits whatever else is in x and whatever M is, on
//! every device, for every weight dtype. The serving engine packs the decode tokens of many
//! sequences into one linear; a sequence's tokens must not change with its neighbours.
use wgllm::backend::cpu::CpuBackend;
use wgllm::backend::wgpu::WgpuBackend;
use wgllm::backend::BatchInvariance;
use wgllm::parity::case::{input, Init};
use wgllm::{Backend, DType, Op};

/// y = x[..m] Wᵀ as bits, row by row; x's rows repeat every 64 (row i is row i % 64).
fn rows(dev: &dyn Backend, wd: DType, k: usize, n: usize, m: usize) -> Vec<Vec<u32>> {
    let x64 = input(DType::F32, &[64, k], Init::Normal { seed: 5, std: 1.0 }).bytes();
    let x: Vec<u8> = x64.iter().copied().cycle().take(m * k * 4).collect();
    let winit = if wd.is_quant() {
        Init::QuantBlocks { seed: 7 }
    } else {
        Init::Normal { seed: 7, std: 0.05 }
    };
    let w = input(wd, &[n, k], winit).bytes();
    let wt = dev.alloc(wd, &[n, k]).unwrap();
    dev.upload(&wt, &w).unwrap();
    let xt = dev.alloc(DType::F32, &[m, k]).unwrap();
    dev.upload(&xt, &x[..m * k * 4]).unwrap();
    let yt = dev.alloc(DType::F32, &[m, n]).unwrap();
    dev.run(&Op::Linear, &[&xt, &wt], &[&yt]).unwrap();
    let y = dev.download(&yt).unwrap();
    y.chunks(n * 4)
        .map(|r| r.chunks(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect())
        .collect()
}

#[test]
fn linear_rows_do_not_depend_on_m() {
    let mut devs: Vec<Box<dyn Backend>> = vec![Box::new(CpuBackend::new())];
    devs.extend(WgpuBackend::all().into_iter().map(|d| Box::new(d) as Box<dyn Backend>));
    let mut bad = vec![];
    let mut checked = 0;
    for (dev, mode) in devs
        .iter()
        .flat_map(|d| [BatchInvariance::FewRows, BatchInvariance::ManyRows].map(|m| (d, m)))
    {
        dev.set_batch_invariant(mode);
        for wd in [
            DType::F32,
            DType::BF16,
            DType::F16,
            DType::Q8_0,
            DType::Q4_0,
            DType::Q4_1,
            DType::Q4K,
            DType::Q6K,
        ] {
            for (k, n) in [(256, 96), (2048, 1000)] {
                let all = rows(dev.as_ref(), wd, k, n, 64);
                for m in [1, 2, 3, 4, 5, 8, 9, 17, 63, 64, 65, 100] {
                    let some = rows(dev.as_ref(), wd, k, n, m);
                    for (i, r) in some.iter().enumerate() {
                        checked += 1;
                        if *r != all[i % 64] {
                            bad.push(format!(
                                "{} {mode:?} {wd} k{k} n{n}: row {i} of M={m} differs from M=64",
                                dev.name()
                            ));
                            break;
                        }
                    }
                }
            }
        }
    }
    eprintln!("{checked} rows checked");
    assert!(checked > 0);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
