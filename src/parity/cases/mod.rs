//! Case generators, one file per op family (gdn.rs: Qwen3.5's). Loops over dtypes x shapes, odd sizes included.
mod attention;
mod elementwise;
mod embed;
mod gdn;
mod linear;
mod norm;
mod quant;
mod reduce;
mod rope;

use super::case::Case;

/// Every case, in a stable order. Ids are unique (checked by a test).
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(embed::cases());
    v.extend(norm::cases());
    v.extend(norm::norm_rope_cases());
    v.extend(norm::add_norm_cases());
    v.extend(linear::cases());
    v.extend(quant::linear_cases());
    v.extend(quant::embedding_cases());
    v.extend(rope::cases());
    v.extend(attention::cases());
    v.extend(elementwise::cases());
    v.extend(reduce::cases());
    v.extend(gdn::conv_cases());
    v.extend(gdn::gdn_cases());
    v.extend(gdn::gated_norm_cases());
    v.extend(gdn::gated_attention_cases());
    v
}

/// The float dtypes every op is tested in.
pub(crate) use crate::dtype::DType;
pub(crate) const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

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
