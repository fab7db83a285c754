//! The reference of `Op::Sample`: one token per row of logits (greedy, or temperature, top-k,
//! top-p and a draw by the row's uniform number u), with its logprob and the top-K alternatives.
//!
//! Why integers: a draw compares u against cumulative probability mass, and the smallest
//! difference in that mass can move the draw to a neighbouring token. WGSL's `exp` is not
//! correctly rounded and float sums depend on their order, so the probabilities here are
//! fixed-point integers made by integer operations only (`weight`): 2^-z for z = (m - l) * scale
//! with the one float subtraction and one float product correctly rounded (denormals flushed by
//! hand, so a device that flushes them agrees), then a 64-entry table and a cubic in Q32. Sums of
//! integers are exact in any order, so the kernel may reduce however it likes and still agree
//! with this file bit for bit, and the host `Sampler` calls `pick` so host and device choose alike.
//! The logprobs are values, not choices: f64 here, f32 on the device, compared with a tolerance.

/// The weight of the row's top token: 2^45. A token below the top by more than 45 halvings of
/// probability (relative probability < 2^-45 ~ 2.8e-14) weighs 0 and is never drawn.
pub const TOP_WEIGHT_BITS: u32 = 45;
/// The largest vocabulary: V weights of at most 2^45 sum below 2^64.
pub const MAX_VOCAB: usize = (1 << 19) - 1;
/// top_p and u are read as 24-bit fractions (`fraction24`).
const ONE24: u32 = 1 << 24;

/// 2^(-j/64) in Q31 (round to nearest), j = 0..64; shaders/sample_weight.wgsl holds the same numbers
/// (a test compares them).
pub const EXP2_TABLE: [u32; 64] = [
    2147483648, 2124350982, 2101467502, 2078830522, 2056437387, 2034285470, 2012372174, 1990694927, 1969251188,
    1948038440, 1927054196, 1906295993, 1885761398, 1865448001, 1845353420, 1825475297, 1805811301, 1786359126,
    1767116489, 1748081133, 1729250827, 1710623359, 1692196547, 1673968228, 1655936265, 1638098541, 1620452965,
    1602997467, 1585730000, 1568648537, 1551751076, 1535035634, 1518500250, 1502142985, 1485961921, 1469955159,
    1454120821, 1438457051, 1422962010, 1407633882, 1392470869, 1377471191, 1362633090, 1347954824, 1333434672,
    1319070932, 1304861917, 1290805962, 1276901417, 1263146652, 1249540052, 1236080024, 1222764986, 1209593378,
    1196563654, 1183674286, 1170923762, 1158310587, 1145833280, 1133490379, 1121280436, 1109202018, 1097253708,
    1085434106,
];
/// ln 2 in Q32.
const LN2_Q32: u32 = 2977044472;

fn mulhi(a: u32, b: u32) -> u32 {
    ((a as u64 * b as u64) >> 32) as u32
}

/// Order-preserving key of an f32 (as argmax.wgsl's okey): NaN -> 1, -0 -> the key of +0.
pub fn okey(b: u32) -> u32 {
    if b & 0x7fff_ffff > 0x7f80_0000 {
        1
    } else if b == 0x8000_0000 {
        0x8000_0000
    } else if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

fn unkey(k: u32) -> f32 {
    f32::from_bits(if k >= 0x8000_0000 { k & 0x7fff_ffff } else { !k })
}

/// A subnormal becomes +0: devices may flush them or not, this contract always does.
fn flush(x: f32) -> f32 {
    if x.to_bits() & 0x7f80_0000 == 0 {
        0.0
    } else {
        x
    }
}

/// 2^-z in Q45 for a z >= 0 (its bits), by integer operations only; 0 once z >= 46.
pub fn exp2_neg_q45(zb: u32) -> u64 {
    let (n, f) = if zb < 0x0080_0000 {
        (0, 0)
    } else {
        let e = (zb >> 23) as i32 - 127;
        if e >= 6 {
            return 0;
        }
        let mant = (zb & 0x7f_ffff) | 0x80_0000;
        if e >= 0 {
            (mant >> (23 - e), mant.wrapping_shl(9 + e as u32))
        } else {
            let s = (-1 - e) as u32;
            (0, if s >= 32 { 0 } else { (mant << 8) >> s })
        }
    };
    if n >= TOP_WEIGHT_BITS + 1 {
        return 0;
    }
    let t = EXP2_TABLE[(f >> 26) as usize];
    // 2^-r = e^-a for the remaining r < 2^-6, a = r ln 2: 1 - (a - a^2/2 + a^3/6), all Q32
    let a = mulhi(f & 0x03ff_ffff, LN2_Q32);
    let a2 = mulhi(a, a);
    let a3 = mulhi(a2, a);
    let deficit = a - (a2 >> 1) + a3 / 6;
    let e31 = t - mulhi(t, deficit);
    ((e31 as u64) << (TOP_WEIGHT_BITS - 31)) >> n
}

/// The weight of logit `l` in a row whose largest logit is `m`, at `scale` = log2(e) / T:
/// 2^-((m - l) * scale) in Q45. NaN and -inf weigh 0; with m = +inf only the +inf logits weigh.
pub fn weight(l: f32, m: f32, scale: f32) -> u64 {
    if l.is_nan() || l == f32::NEG_INFINITY || m == f32::NEG_INFINITY {
        return 0;
    }
    if m == f32::INFINITY {
        return if l == f32::INFINITY { 1 << TOP_WEIGHT_BITS } else { 0 };
    }
    let d = flush(flush(m) - flush(l));
    let z = flush(d * scale);
    exp2_neg_q45(z.to_bits())
}

/// A number in [0, 1] as a 24-bit fraction: floor(x * 2^24), 2^24 for x >= 1 (NaN too), 0 below 0.
fn fraction24(x: f32) -> u32 {
    let b = x.to_bits();
    if b & 0x8000_0000 != 0 {
        0
    } else if b >= 0x3f80_0000 {
        ONE24
    } else {
        (x * ONE24 as f32) as u32
    }
}

/// floor(x * f / 2^24) for a 24-bit fraction f.
fn scale24(x: u64, f: u32) -> u64 {
    ((x as u128 * f as u128) >> 24) as u64
}

/// The row's parameters as the kernel reads them: None for greedy (scale not a normal positive
/// number, or top_k 1), else (scale, k (0 = all), top_p as a 24-bit fraction, u as one below 2^24).
fn row_params(p: &[f32], v: usize) -> Option<(f32, usize, u32, u32)> {
    let sb = p[0].to_bits();
    let kb = p[1].to_bits();
    // top_k: an integer-valued f32 in 1..2^24; anything else is "all"
    let k = if (0x3f80_0000..0x4b80_0000).contains(&kb) {
        p[1] as usize
    } else {
        0
    };
    if !(0x0080_0000..0x7f80_0000).contains(&sb) || k == 1 {
        return None;
    }
    let k = if k == 0 || k > v { v } else { k };
    Some((p[0], k, fraction24(p[2]), fraction24(p[3]).min(ONE24 - 1)))
}

/// Descending by key, ties to the lower id: the order every part of the op uses.
fn order(row: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    idx.sort_by_key(|&j| (std::cmp::Reverse(okey(row[j].to_bits())), j));
    idx
}

/// One row's token: params = (scale = log2(e)/T, top_k, top_p, u), see `Op::Sample`.
pub fn pick(row: &[f32], params: &[f32]) -> u32 {
    let ord = order(row);
    let Some((scale, k, tp, u)) = row_params(params, row.len()) else {
        return ord[0] as u32;
    };
    let m = unkey(okey(row[ord[0]].to_bits()));
    let w: Vec<u64> = row.iter().map(|&l| weight(l, m, scale)).collect();
    let z: u64 = w.iter().sum();
    if z == 0 {
        return ord[0] as u32;
    }
    // the smallest prefix of the first k holding at least the fraction top_p of all the mass
    let target = scale24(z, tp).max(1);
    let mut mass = 0u64;
    let mut n = 0;
    for &j in &ord[..k] {
        mass += w[j];
        n += 1;
        if mass >= target {
            break;
        }
    }
    // the draw: the first kept token whose cumulative mass passes floor(u * kept mass)
    let d = scale24(mass, u);
    let mut cum = 0u64;
    for &j in &ord[..n] {
        cum += w[j];
        if cum > d {
            return j as u32;
        }
    }
    unreachable!("the kept mass {mass} exceeds the draw {d}")
}

/// log-softmax of the row at temperature 1 for the elements `ids`, in f64 rounded to f32: finite
/// logits l - m - ln(sum exp(l_j - m)), -inf stays -inf, NaN stays NaN; a row without a finite
/// maximum gives NaN.
pub fn logprobs_of(row: &[f32], ids: &[u32]) -> Vec<f32> {
    let m = unkey(row.iter().map(|l| okey(l.to_bits())).max().unwrap_or(1));
    if !m.is_finite() {
        return vec![f32::NAN; ids.len()];
    }
    let s: f64 = row
        .iter()
        .filter(|l| l.is_finite())
        .map(|&l| (l as f64 - m as f64).exp())
        .sum();
    let ln_s = s.ln();
    ids.iter()
        .map(|&j| {
            let l = row[j as usize];
            if l.is_finite() {
                (l as f64 - m as f64 - ln_s) as f32
            } else {
                l
            }
        })
        .collect()
}

/// logits [R, V], params [R, 4] -> (ids [R, 1 + k], logprobs [R, 1 + k]): the chosen token and
/// then the k best by logit (descending, ties to the lower id), with their logprobs.
pub fn sample(logits: &[f32], params: &[f32], v: usize, k: usize) -> (Vec<u32>, Vec<f32>) {
    let mut ids = Vec::new();
    let mut lps = Vec::new();
    for (row, p) in logits.chunks(v).zip(params.chunks(4)) {
        let mut r = vec![pick(row, p)];
        r.extend(order(row)[..k].iter().map(|&j| j as u32));
        lps.extend(logprobs_of(row, &r));
        ids.extend(r);
    }
    (ids, lps)
}

#[cfg(test)]
#[path = "sample_tests.rs"]
mod tests;
