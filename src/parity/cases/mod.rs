//! Case generators, one file per op family, named after the op (a family's block-quantized cases
//! sit with its float ones). Loops over dtypes x shapes, odd sizes included.
mod attention;
mod causal_conv1d;
mod elementwise;
mod embedding;
mod gated_attention;
mod gdn;
pub mod gdn_batch;
mod linear;
mod linear_tail;
mod min_p;
pub mod paged_attention;
mod penalties;
mod reduce;
mod rms_norm;
mod rms_norm_gated;
mod rms_norm_rope_kv;
mod rms_norm_rope_kv_attention;
mod rope;
mod sample;

use super::case::Case;

/// Every case, in a stable order. Ids are unique (checked by a test).
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(embedding::cases());
    v.extend(rms_norm::cases());
    v.extend(rms_norm::norm_rope_cases());
    v.extend(rms_norm::add_norm_cases());
    v.extend(rms_norm_rope_kv::cases());
    v.extend(rms_norm_rope_kv_attention::cases());
    v.extend(linear::cases());
    v.extend(linear::quant_cases());
    v.extend(linear::swiglu_cases());
    v.extend(linear::linear_swiglu_cases());
    v.extend(linear::add_norm_cases());
    v.extend(linear::norm_after_cases());
    v.extend(linear_tail::linear_add_cases());
    v.extend(linear_tail::rms_norm_linear_cases());
    v.extend(rms_norm_rope_kv::linear_cases());
    v.extend(linear::many_rows_cases());
    v.extend(embedding::quant_cases());
    v.extend(rope::cases());
    v.extend(attention::cases());
    v.extend(elementwise::cases());
    v.extend(reduce::cases());
    v.extend(causal_conv1d::cases());
    v.extend(gdn::cases());
    v.extend(rms_norm_gated::cases());
    v.extend(gated_attention::cases());
    v.extend(paged_attention::cases());
    v.extend(penalties::cases());
    v.extend(min_p::cases());
    v.extend(gdn_batch::cases());
    v.extend(sample::cases());
    v
}

/// The float dtypes every op is tested in.
pub(crate) use crate::dtype::DType;
pub(crate) const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// Normal(0, std) values from `seed`.
pub(crate) fn normal(seed: u64, std: f32) -> crate::parity::case::Init {
    crate::parity::case::Init::Normal { seed, std }
}

/// A stable seed from a case's tag, so adding a case does not reshuffle the others' data.
pub(crate) use crate::util::seed;

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_unique_and_many() {
        let cases = super::all();
        let mut ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        ids.sort();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n, "duplicate case ids");
        assert!(n >= 200, "only {n} cases");
        for c in &cases {
            c.desc().check().unwrap_or_else(|e| panic!("{}: {e}", c.id));
        }
    }
}
