//! The paged attention ops' teeth (tests/ops.rs lists what each breaks and which cases go red):
//! the kernels of paged_attention, paged_gated_attention and rms_norm_rope_kv_attention patched,
//! and for a case, each tooth with whether it must turn that case red.
use super::{Patched, Tooth};
use std::sync::Arc;
use wgllm::backend::wgpu::MAX_GROUP;
use wgllm::op::Op;
use wgllm::parity::case::Case;

pub struct PagedTeeth {
    block: Arc<Patched>,
    pub causal: Arc<Patched>,
    lone_pos: Arc<Patched>,
    first_part: Arc<Patched>,
    lone_part: Arc<Patched>,
    row_gate: Arc<Patched>,
    key_norm: Arc<Patched>,
    gate_sign: Arc<Patched>,
    q_offset: Arc<Patched>,
    fused_rope: Arc<Patched>,
    lone_gate: Arc<Patched>,
    lone_kn: Arc<Patched>,
    fused_write: Arc<Patched>,
    lone_sum: Arc<Patched>,
}

impl PagedTeeth {
    pub fn new() -> PagedTeeth {
        PagedTeeth {
            block: Arc::new(Patched::new(
                "block_index_off_by_one",
                "paged_pool.wgsl",
                "ld_bt(tbl + j / PBS)",
                "ld_bt(tbl + (j + 1u) / PBS)",
            )),
            causal: Arc::new(Patched::new(
                "chunk_causal_mask_dropped",
                "paged_attention.wgsl",
                "select(0u, kv - cnt + (t - start), ok)",
                "select(0u, kv - 1u, ok)",
            )),
            // a lone sequence's prefill chunk under invariance off (the parity runner's default) takes
            // wgpu's prefill tile: its rows' positions one too far
            lone_pos: Arc::new(Patched::new(
                "lone_prefill_position_off_by_one",
                "paged_attention_prefill.wgsl",
                "select(0u, kv - cnt, ok)",
                "select(0u, kv - cnt + 1u, ok)",
            )),
            first_part: Arc::new(Patched::new(
                "combine_first_partition_dropped",
                "paged_attention_rows.wgsl",
                "    i = 0u;",
                "    i = 1u;",
            )),
            // a lone decode step's partitions combined by the last workgroup from the second on
            lone_part: Arc::new(Patched::new(
                "lone_first_partition_dropped",
                "paged_attention_lone.wgsl",
                "let rr = r0 + min(k + u, nv - 1u) * G * RS;",
                "let rr = r0 + min(k + u + 1u, nv - 1u) * G * RS;",
            )),
            row_gate: Arc::new(Patched::new(
                "row_gate_sign_flipped",
                "paged_gated_attention.wgsl",
                "o = o / (1.0 + exp(-gate));",
                "o = o / (1.0 + exp(gate));",
            )),
            key_norm: Arc::new(Patched::new(
                "key_norm_partials_halved",
                "paged_gated_attention_kv.wgsl",
                "let total = wg_sum(ss, lid);",
                "let total = wg_sum(select(0.0, ss, lid < WG / 2u), lid);",
            )),
            gate_sign: Arc::new(Patched::new(
                "gate_sign_flipped",
                "paged_gated_out.wgsl",
                "/ (1.0 + exp(-gate))",
                "/ (1.0 + exp(gate))",
            )),
            q_offset: Arc::new(Patched::new(
                "query_norm_offset_dropped",
                "paged_gated_q.wgsl",
                "let a = ld_qg(qrow + e) * inv * (1.0 + ld_qn(e));",
                "let a = ld_qg(qrow + e) * inv * ld_qn(e);",
            )),
            fused_rope: Arc::new(Patched::new(
                "fused_rope_sign_flipped",
                "paged_attention_lone_rope.wgsl",
                "y = n * cs[it] - raw_s[i + half / 4u] * sn[it];",
                "y = n * cs[it] + raw_s[i + half / 4u] * sn[it];",
            )),
            lone_gate: Arc::new(Patched::new(
                "lone_gate_sign_flipped",
                "paged_attention_lone_gated.wgsl",
                "return o / (1.0 + exp(-gate_s[hh * DH4 + c4]));",
                "return o / (1.0 + exp(gate_s[hh * DH4 + c4]));",
            )),
            lone_kn: Arc::new(Patched::new(
                "lone_key_norm_offset_dropped",
                "paged_attention_lone_gated.wgsl",
                "return 1.0 + vec4<f32>(ld_kn(e),",
                "return vec4<f32>(ld_kn(e),",
            )),
            fused_write: Arc::new(Patched::new(
                "fused_kv_write_dropped",
                "paged_attention_lone_rope.wgsl",
                "let write = part == 0u && slot < p.nb * p.bs;",
                "let write = false && slot < p.nb * p.bs;",
            )),
            // a lone decode step's output: each column's R partial sums read from column c4 % 8
            lone_sum: Arc::new(Patched::new(
                "lone_output_columns_folded",
                "paged_attention_lone.wgsl",
                "o += out_s[(it / DH4) * NT + rr * DH4 + c4];",
                "o += out_s[(it / DH4) * NT + rr * DH4 + c4 % 8u];",
            )),
        }
    }

    /// Each tooth of a paged attention case (paged_attention, paged_gated_attention,
    /// rms_norm_rope_kv_attention) with whether the case must go red with it in.
    pub fn bites(&self, case: &Case) -> Vec<(Tooth, bool)> {
        let block_size = match case.op {
            Op::PagedAttention { block_size, .. } | Op::PagedGatedAttention { block_size, .. } => block_size,
            Op::RmsNormRopeKvAttention { .. } => {
                return vec![
                    (Tooth::Patched(self.fused_rope.clone()), true),
                    (Tooth::Patched(self.fused_write.clone()), true),
                    (Tooth::Patched(self.lone_sum.clone()), true),
                ]
            }
            _ => unreachable!("{}: not a paged attention case", case.id),
        };
        let seqs = paged_seqs(&case);
        // one sequence of several rows: wgpu's lone-prefill tile, not the per-row kernels
        // (the gated op runs paged_attention's kernels between its own: paged_gated_split.rs)
        let lone = seqs.len() == 1 && seqs[0].0 > 1;
        let gated = matches!(case.op, Op::PagedGatedAttention { .. });
        // paged_attention's key partitions are 64 keys: longer rows are combined
        let long = seqs.iter().any(|&(_, kv)| kv > 64);
        // a lone decode step: paged_attention_lone.wgsl's partitions of a chunk (32 keys,
        // 16 past head_dim 128: paged_attention_lone.rs `chunk`) for tables of at most 64
        // chunks, combined in the same dispatch when the row has two or more
        let lone_step = seqs.len() == 1 && seqs[0].0 == 1;
        let dh = case.outputs[0].shape[2];
        let lone_chunk = if dh > 128 { 16 } else { 32 };
        // a group paged_attention does not take: the gated op's per-row kernel throughout
        let hkv = if gated {
            case.outputs[1].shape[2]
        } else {
            case.inputs[1].desc.shape[2]
        };
        let group = case.inputs[0].desc.shape[1] / hkv.max(1);
        let per_row = gated && group > MAX_GROUP;
        // the gated op's lone decode step: paged_attention_lone.wgsl, its gated prologue
        let gated_lone = gated && lone_step && !per_row;
        let mut bites = vec![
            (
                Tooth::Patched(self.block.clone()),
                seqs.iter().any(|&(_, kv)| kv >= block_size),
            ),
            // the gated op's own kernels place a lone chunk's rows (new keys, RoPE) by it too
            (
                Tooth::Patched(self.causal.clone()),
                (!lone || gated) && seqs.iter().any(|&(q, _)| q > 1),
            ),
            (
                Tooth::Patched(self.first_part.clone()),
                !lone && !lone_step && long && !per_row,
            ),
            (Tooth::Patched(self.lone_pos.clone()), lone),
            (
                Tooth::Patched(self.lone_part.clone()),
                lone_step && seqs[0].1 > lone_chunk && !per_row,
            ),
        ];
        if gated {
            // the new keys' norm summed from half the threads' partials: every key wrong;
            // the split's gate and query kernels (paged_gated_split.rs), or the per-row
            // kernel's gate: every row wrong; a lone step's kernel: its gate, its key
            // norm, its RoPE and its cache write
            let split = !gated_lone && !per_row;
            bites.push((Tooth::Patched(self.key_norm.clone()), !gated_lone));
            bites.push((Tooth::Patched(self.gate_sign.clone()), split));
            bites.push((Tooth::Patched(self.q_offset.clone()), split));
            bites.push((Tooth::Patched(self.row_gate.clone()), per_row));
            for lone_tooth in [&self.lone_gate, &self.lone_kn, &self.fused_rope, &self.fused_write] {
                bites.push((Tooth::Patched((*lone_tooth).clone()), gated_lone));
            }
        }
        bites
    }
}

/// (query count, kv length) of each sequence of a paged attention case (its seqs operand).
fn paged_seqs(case: &Case) -> Vec<(usize, usize)> {
    let k = if matches!(case.op, Op::PagedAttention { .. }) {
        4
    } else {
        8
    };
    match &case.inputs[k].init {
        wgllm::parity::case::Init::U32s(v) => v.chunks(3).map(|f| (f[1] as usize, f[2] as usize)).collect(),
        other => panic!("{}: seqs is not explicit u32s: {other:?}", case.id),
    }
}
