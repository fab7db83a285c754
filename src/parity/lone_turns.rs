//! A lone decode step's attention kernel (wgpu's paged_attention_lone.wgsl) keeps its
//! workgroups' hand-over words (counters, records) in one scratch a device shares between every
//! call, whatever its head count and key partitions. This check runs lone-step cases of
//! different kv head counts and partition counts one after another on one device (the order of a
//! device serving two models, or the parity suite's threads), each against the CPU: a call that
//! found another's records where it keeps its counters would combine the wrong partitions.
use super::run::{check, reference, Outcome};
use crate::backend::Backend;

/// Case ids, in the order run: many partitions over 2 kv heads, then 8 kv heads, 1, 8 again.
const TURNS: [&str; 5] = [
    "rms_norm_rope_kv_attention[kvf32,Hq8,Hkv2,dh128,rot128,1/300",
    "rms_norm_rope_kv_attention[kvf32,Hq16,Hkv8,dh128,rot128,w-per-head,1/100",
    "rms_norm_rope_kv_attention[kvf16,Hq8,Hkv1,dh256,rot64,w-per-head,1/70",
    "paged_attention[kvf32,Hkv2,dh128,1/300,",
    "rms_norm_rope_kv_attention[kvbf16,Hq16,Hkv8,dh128,rot128,w-per-head,1/100",
];

/// Ok(summary), or Err naming the case that went wrong and how.
pub fn check_turns(dev: &dyn Backend) -> Result<String, String> {
    let all = super::cases::all();
    let (mut passed, mut skipped) = (0, 0);
    for id in TURNS {
        let case = all
            .iter()
            .find(|c| c.id.starts_with(id))
            .ok_or_else(|| format!("no parity case {id}.."))?;
        match check(case, dev, &reference(case)) {
            Outcome::Pass { .. } => passed += 1,
            Outcome::Skip { .. } => skipped += 1,
            Outcome::Fail { error } => return Err(format!("{} after the cases before it: {error}", case.id)),
        }
    }
    if passed == 0 {
        return Err(format!("no case compared ({skipped} refused)"));
    }
    Ok(format!("{passed} cases in turn passed, {skipped} refused"))
}
