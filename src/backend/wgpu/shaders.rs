//! The WGSL sources of the wgpu backend: every file under shaders/, embedded at build time, by
//! file name. A backend opened with a shader directory (`Tuning::shader_dir`, `WGLLM_SHADER_DIR`,
//! `WgpuBackend::all_with_shader_dir`) reads every one of these files from that directory once, when
//! it opens, and compiles its kernels from those copies instead (kernel work without rebuilding,
//! and tests that show a patched kernel turns parity cases red); nothing is read after that.
//!
//! Also the source transforms kernel families share: `select_sg` (and with it `sg_sum.wgsl`) and
//! `fill` (generated lines in place of `//@name` template lines).
use std::collections::HashMap;
use std::path::Path;

/// Every file under shaders/, by name (tests check the table against the directory).
pub const FILES: [(&str, &str); 91] = [
    ("add_rms_norm.wgsl", include_str!("../../../shaders/add_rms_norm.wgsl")),
    ("argmax.wgsl", include_str!("../../../shaders/argmax.wgsl")),
    ("attention.wgsl", include_str!("../../../shaders/attention.wgsl")),
    (
        "attention_decode.wgsl",
        include_str!("../../../shaders/attention_decode.wgsl"),
    ),
    (
        "attention_decode_loop.wgsl",
        include_str!("../../../shaders/attention_decode_loop.wgsl"),
    ),
    (
        "attention_prefill.wgsl",
        include_str!("../../../shaders/attention_prefill.wgsl"),
    ),
    (
        "attention_prefill_merge.wgsl",
        include_str!("../../../shaders/attention_prefill_merge.wgsl"),
    ),
    (
        "attention_prefill_loop.wgsl",
        include_str!("../../../shaders/attention_prefill_loop.wgsl"),
    ),
    ("bandwidth.wgsl", include_str!("../../../shaders/bandwidth.wgsl")),
    ("bandwidth_v4.wgsl", include_str!("../../../shaders/bandwidth_v4.wgsl")),
    (
        "causal_conv1d.wgsl",
        include_str!("../../../shaders/causal_conv1d.wgsl"),
    ),
    (
        "causal_conv1d_batch.wgsl",
        include_str!("../../../shaders/causal_conv1d_batch.wgsl"),
    ),
    ("common.wgsl", include_str!("../../../shaders/common.wgsl")),
    ("convert.wgsl", include_str!("../../../shaders/convert.wgsl")),
    ("elementwise.wgsl", include_str!("../../../shaders/elementwise.wgsl")),
    ("embedding.wgsl", include_str!("../../../shaders/embedding.wgsl")),
    (
        "gated_attention.wgsl",
        include_str!("../../../shaders/gated_attention.wgsl"),
    ),
    (
        "gated_attention_decode.wgsl",
        include_str!("../../../shaders/gated_attention_decode.wgsl"),
    ),
    (
        "gated_attention_prefill.wgsl",
        include_str!("../../../shaders/gated_attention_prefill.wgsl"),
    ),
    ("gdn.wgsl", include_str!("../../../shaders/gdn.wgsl")),
    ("gdn_batch.wgsl", include_str!("../../../shaders/gdn_batch.wgsl")),
    (
        "gdn_conv_norm.wgsl",
        include_str!("../../../shaders/gdn_conv_norm.wgsl"),
    ),
    (
        "gdn_chunk_prep.wgsl",
        include_str!("../../../shaders/gdn_chunk_prep.wgsl"),
    ),
    (
        "gdn_chunk_scan.wgsl",
        include_str!("../../../shaders/gdn_chunk_scan.wgsl"),
    ),
    (
        "gdn_chunk_slot.wgsl",
        include_str!("../../../shaders/gdn_chunk_slot.wgsl"),
    ),
    (
        "gdn_recurrent.wgsl",
        include_str!("../../../shaders/gdn_recurrent.wgsl"),
    ),
    (
        "gdn_recurrent_tile.wgsl",
        include_str!("../../../shaders/gdn_recurrent_tile.wgsl"),
    ),
    (
        "gdn_tile_conv.wgsl",
        include_str!("../../../shaders/gdn_tile_conv.wgsl"),
    ),
    ("gdn_tile_in.wgsl", include_str!("../../../shaders/gdn_tile_in.wgsl")),
    ("gdn_tile_out.wgsl", include_str!("../../../shaders/gdn_tile_out.wgsl")),
    ("kv_write.wgsl", include_str!("../../../shaders/kv_write.wgsl")),
    ("limbs.wgsl", include_str!("../../../shaders/limbs.wgsl")),
    ("linear.wgsl", include_str!("../../../shaders/linear.wgsl")),
    (
        "linear_add_rms_norm.wgsl",
        include_str!("../../../shaders/linear_add_rms_norm.wgsl"),
    ),
    ("linear_coop.wgsl", include_str!("../../../shaders/linear_coop.wgsl")),
    (
        "linear_rms_norm_rope_kv.wgsl",
        include_str!("../../../shaders/linear_rms_norm_rope_kv.wgsl"),
    ),
    (
        "linear_splitk.wgsl",
        include_str!("../../../shaders/linear_splitk.wgsl"),
    ),
    ("matvec.wgsl", include_str!("../../../shaders/matvec.wgsl")),
    ("matvec_norm.wgsl", include_str!("../../../shaders/matvec_norm.wgsl")),
    (
        "paged_attention.wgsl",
        include_str!("../../../shaders/paged_attention.wgsl"),
    ),
    (
        "paged_attention_lone.wgsl",
        include_str!("../../../shaders/paged_attention_lone.wgsl"),
    ),
    (
        "paged_attention_lone_gated.wgsl",
        include_str!("../../../shaders/paged_attention_lone_gated.wgsl"),
    ),
    (
        "paged_attention_lone_q.wgsl",
        include_str!("../../../shaders/paged_attention_lone_q.wgsl"),
    ),
    (
        "paged_attention_lone_rope.wgsl",
        include_str!("../../../shaders/paged_attention_lone_rope.wgsl"),
    ),
    (
        "paged_attention_lone_x.wgsl",
        include_str!("../../../shaders/paged_attention_lone_x.wgsl"),
    ),
    (
        "paged_attention_loop.wgsl",
        include_str!("../../../shaders/paged_attention_loop.wgsl"),
    ),
    (
        "paged_attention_prefill.wgsl",
        include_str!("../../../shaders/paged_attention_prefill.wgsl"),
    ),
    (
        "paged_attention_rows.wgsl",
        include_str!("../../../shaders/paged_attention_rows.wgsl"),
    ),
    (
        "paged_decode_attend.wgsl",
        include_str!("../../../shaders/paged_decode_attend.wgsl"),
    ),
    (
        "paged_gated_attention.wgsl",
        include_str!("../../../shaders/paged_gated_attention.wgsl"),
    ),
    (
        "paged_gated_q.wgsl",
        include_str!("../../../shaders/paged_gated_q.wgsl"),
    ),
    (
        "paged_gated_out.wgsl",
        include_str!("../../../shaders/paged_gated_out.wgsl"),
    ),
    (
        "paged_gated_attention_kv.wgsl",
        include_str!("../../../shaders/paged_gated_attention_kv.wgsl"),
    ),
    ("paged_pool.wgsl", include_str!("../../../shaders/paged_pool.wgsl")),
    ("min_p.wgsl", include_str!("../../../shaders/min_p.wgsl")),
    ("sample.wgsl", include_str!("../../../shaders/sample.wgsl")),
    ("sample_head.wgsl", include_str!("../../../shaders/sample_head.wgsl")),
    (
        "sample_weight.wgsl",
        include_str!("../../../shaders/sample_weight.wgsl"),
    ),
    ("sample_tree.wgsl", include_str!("../../../shaders/sample_tree.wgsl")),
    ("penalties.wgsl", include_str!("../../../shaders/penalties.wgsl")),
    ("q4_0.wgsl", include_str!("../../../shaders/q4_0.wgsl")),
    ("q4_1.wgsl", include_str!("../../../shaders/q4_1.wgsl")),
    ("q4_k.wgsl", include_str!("../../../shaders/q4_k.wgsl")),
    ("q4_k_dp.wgsl", include_str!("../../../shaders/q4_k_dp.wgsl")),
    ("q4_k_v4.wgsl", include_str!("../../../shaders/q4_k_v4.wgsl")),
    ("q6_k.wgsl", include_str!("../../../shaders/q6_k.wgsl")),
    ("q8_0.wgsl", include_str!("../../../shaders/q8_0.wgsl")),
    ("q8_0_v4.wgsl", include_str!("../../../shaders/q8_0_v4.wgsl")),
    ("qcommon.wgsl", include_str!("../../../shaders/qcommon.wgsl")),
    ("qdots.wgsl", include_str!("../../../shaders/qdots.wgsl")),
    ("qembed.wgsl", include_str!("../../../shaders/qembed.wgsl")),
    ("qlanes.wgsl", include_str!("../../../shaders/qlanes.wgsl")),
    ("qx_norm.wgsl", include_str!("../../../shaders/qx_norm.wgsl")),
    ("qx_v4.wgsl", include_str!("../../../shaders/qx_v4.wgsl")),
    ("qx_words.wgsl", include_str!("../../../shaders/qx_words.wgsl")),
    ("qmatvec.wgsl", include_str!("../../../shaders/qmatvec.wgsl")),
    ("qmatvec_xs.wgsl", include_str!("../../../shaders/qmatvec_xs.wgsl")),
    ("rms_norm.wgsl", include_str!("../../../shaders/rms_norm.wgsl")),
    (
        "rms_norm_gated.wgsl",
        include_str!("../../../shaders/rms_norm_gated.wgsl"),
    ),
    (
        "rms_norm_rope.wgsl",
        include_str!("../../../shaders/rms_norm_rope.wgsl"),
    ),
    (
        "rms_norm_rope_kv.wgsl",
        include_str!("../../../shaders/rms_norm_rope_kv.wgsl"),
    ),
    (
        "rms_norm_rope_row.wgsl",
        include_str!("../../../shaders/rms_norm_rope_row.wgsl"),
    ),
    (
        "rms_norm_rows.wgsl",
        include_str!("../../../shaders/rms_norm_rows.wgsl"),
    ),
    ("rope.wgsl", include_str!("../../../shaders/rope.wgsl")),
    ("sg_sum.wgsl", include_str!("../../../shaders/sg_sum.wgsl")),
    ("softmax.wgsl", include_str!("../../../shaders/softmax.wgsl")),
    ("swiglu_pairs.wgsl", include_str!("../../../shaders/swiglu_pairs.wgsl")),
    ("topk.wgsl", include_str!("../../../shaders/topk.wgsl")),
    ("wg_sum.wgsl", include_str!("../../../shaders/wg_sum.wgsl")),
    ("wg_tree.wgsl", include_str!("../../../shaders/wg_tree.wgsl")),
    ("xlimbs.wgsl", include_str!("../../../shaders/xlimbs.wgsl")),
];

/// The embedded text of shaders/`name`; panics on a name that is not in `FILES` (a typo in the
/// backend, not a run-time condition).
pub fn embedded(name: &str) -> &'static str {
    match FILES.iter().find(|(n, _)| *n == name) {
        Some((_, s)) => s,
        None => panic!("no shader file shaders/{name} (shaders.rs FILES)"),
    }
}

/// The source set one backend compiles from: the embedded files, or every file read from a
/// directory when the backend opened.
pub struct Sources {
    /// 0 for the embedded files; a number unique in the process for each set read from a
    /// directory (source caches outside the backend key on it).
    id: u64,
    files: Option<HashMap<&'static str, String>>,
}

impl Sources {
    pub fn embedded() -> Sources {
        Sources { id: 0, files: None }
    }

    /// Every file of `FILES` read from `dir`; a file that is missing or unreadable is an error
    /// naming it.
    pub fn load(dir: &Path) -> Result<Sources, String> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let mut files = HashMap::new();
        for (name, _) in FILES {
            let p = dir.join(name);
            let text = std::fs::read_to_string(&p).map_err(|e| format!("shader dir: {}: {e}", p.display()))?;
            files.insert(name, text);
        }
        Ok(Sources {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            files: Some(files),
        })
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// The text of shaders/`name` in this set.
    pub fn get(&self, name: &str) -> &str {
        match &self.files {
            Some(f) => f.get(name).map(String::as_str).unwrap_or_else(|| embedded(name)),
            None => embedded(name),
        }
    }
}

/// Keeps the lines of `#ifdef_sg .. #else_sg .. #endif_sg` blocks that belong to `sg` (the
/// subgroup variants of the float and quantized matvec entries).
pub fn select_sg(src: &str, sg: bool) -> String {
    select(src, "sg", sg)
}

/// Keeps the lines of `#ifdef_{flag} .. #else_{flag} .. #endif_{flag}` blocks that belong to `on`
/// (a kernel's variants that differ in what they declare, which a WGSL constant cannot switch).
pub fn select(src: &str, flag: &str, on: bool) -> String {
    let (ifdef, els, endif) = (
        format!("#ifdef_{flag}"),
        format!("#else_{flag}"),
        format!("#endif_{flag}"),
    );
    let mut out = String::with_capacity(src.len());
    let mut keep = true;
    for line in src.lines() {
        match line.trim() {
            t if t == ifdef => keep = on,
            t if t == els => keep = !on,
            t if t == endif => keep = true,
            _ if keep => {
                out.push_str(line);
                out.push('\n');
            }
            _ => {}
        }
    }
    out
}

/// Replaces each line `//@name` of `src` with the code given for `name` (indented alike).
pub fn fill(src: &str, parts: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(src.len() * 2);
    for line in src.lines() {
        let t = line.trim();
        match t
            .strip_prefix("//@")
            .and_then(|name| parts.iter().find(|(n, _)| *n == name))
        {
            Some((_, code)) => {
                let indent = &line[..line.len() - line.trim_start().len()];
                for l in code.lines() {
                    out.push_str(indent);
                    out.push_str(l);
                    out.push('\n');
                }
            }
            None => {
                assert!(!t.starts_with("//@"), "unfilled template line {t}");
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table names every file under shaders/ and nothing else.
    #[test]
    fn table_matches_the_directory() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".wgsl"))
            .collect();
        on_disk.sort();
        let mut table: Vec<String> = FILES.iter().map(|(n, _)| n.to_string()).collect();
        table.sort();
        assert_eq!(table, on_disk, "shaders.rs FILES vs shaders/");
    }

    /// A directory copy is read once at open; a patched file's text is what the backend compiles.
    #[test]
    fn a_directory_copy_is_read_at_open() {
        let dir = std::env::temp_dir().join(format!("wgllm-shaders-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in FILES {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let same = Sources::load(&dir).unwrap();
        assert_eq!(same.get("rms_norm.wgsl"), embedded("rms_norm.wgsl"));
        let patched = embedded("wg_sum.wgsl").replace("+ p.eps", "");
        assert_ne!(patched, embedded("wg_sum.wgsl"));
        std::fs::write(dir.join("wg_sum.wgsl"), &patched).unwrap();
        let s = Sources::load(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_ne!(s.id(), same.id());
        assert_eq!(s.get("wg_sum.wgsl"), patched);
        assert!(Sources::load(&dir).is_err(), "a missing directory must be an error");
    }
}
