//! The gated delta rule: gdn_recurrent (decode, and a few tokens) and gdn_chunked (prefill). The
//! CPU reference of `gdn_chunked` is the recurrence, so every gdn_chunked case is a
//! chunked-vs-recurrent check (lengths 1, 63, 64, 65, 150 cross the chunk boundary of 64).
use super::{normal, seed, DType};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

/// One gated-delta-rule case: gates as a trained model has them (A_log = log U(1, 16), dt_bias so
/// that softplus(dt_bias) = U(0.001, 0.1)), q/k/v like SiLU'd conv outputs.
#[allow(clippy::too_many_arguments)]
fn gdn_case(
    family: &'static str,
    op: Op,
    x: DType,
    w: DType,
    t: usize,
    nk: usize,
    nv: usize,
    dk: usize,
    dv: usize,
    zero_state: bool,
) -> Case {
    let tag = format!(
        "{}{},nk{nk}nv{nv}dk{dk}dv{dv}{}",
        x.name(),
        if w != x { format!("-w{w}") } else { String::new() },
        if zero_state { ",s0" } else { "" }
    );
    let s = seed(&format!("{family}{tag}{t}"));
    let mut r = Rng::new(s ^ 5);
    let a_log: Vec<f32> = (0..nv).map(|_| (1.0 + 15.0 * r.uniform()).ln() as f32).collect();
    let dt_bias: Vec<f32> = (0..nv)
        .map(|_| (0.001f64 + 0.099 * r.uniform()).exp_m1().ln() as f32)
        .collect();
    let c = 2 * nk * dk + nv * dv;
    let state = if zero_state {
        Init::Values(vec![0.0; nv * dk * dv])
    } else {
        normal(s + 3, 0.2)
    };
    Case::new(
        family,
        &tag,
        op,
        vec![
            input(x, &[t, c], normal(s, 1.0)),
            input(x, &[t, nv], normal(s + 1, 1.5)),
            input(x, &[t, nv], normal(s + 2, 1.5)),
            input(w, &[nv], Init::Values(a_log)),
            input(w, &[nv], Init::Values(dt_bias)),
            input(DType::F32, &[nv, dk, dv], state),
        ],
        vec![
            TensorDesc::new(x, &[t, nv, dv]),
            TensorDesc::new(DType::F32, &[nv, dk, dv]),
        ],
    )
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    // (nk, nv, dk, dv): the tiny model's heads; r = 3 with dk != dv; odd sizes; the 0.8B's heads
    let heads = [(2, 4, 32, 32), (2, 6, 16, 24), (1, 1, 5, 7), (16, 16, 128, 128)];
    let kinds = [
        (DType::F32, DType::F32),
        (DType::F32, DType::BF16),
        (DType::BF16, DType::BF16),
        (DType::F16, DType::F16),
    ];
    for (x, w) in kinds {
        for (nk, nv, dk, dv) in heads {
            let big = dk == 128;
            // the decode step, and a few tokens through the same recurrent kernel
            for t in [1usize, 5] {
                if big && (t != 1 || x != DType::F32) {
                    continue;
                }
                v.push(gdn_case(
                    "gdn_recurrent",
                    Op::GdnRecurrent,
                    x,
                    w,
                    t,
                    nk,
                    nv,
                    dk,
                    dv,
                    false,
                ));
            }
            // chunked vs the recurrent reference across the chunk boundary
            for t in [1usize, 63, 64, 65, 150] {
                if big && (t == 150 || x != DType::F32) {
                    continue;
                }
                v.push(gdn_case("gdn_chunked", Op::GdnChunked, x, w, t, nk, nv, dk, dv, false));
            }
        }
    }
    // a fresh sequence (zero state), prefill and decode
    v.push(gdn_case(
        "gdn_chunked",
        Op::GdnChunked,
        DType::F32,
        DType::BF16,
        100,
        2,
        4,
        32,
        32,
        true,
    ));
    v.push(gdn_case(
        "gdn_recurrent",
        Op::GdnRecurrent,
        DType::F32,
        DType::BF16,
        1,
        2,
        4,
        32,
        32,
        true,
    ));
    v
}
