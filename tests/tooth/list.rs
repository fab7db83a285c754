//! The teeth trials of tests/ops.rs: each known bug and the cases it must turn red.
use super::{bite, PagedTeeth, Patched, Tooth};
use libtest_mimic::{Completion, Failed, Trial};
use std::sync::Arc;
use wgllm::backend::wgpu::WgpuBackend;
use wgllm::backend::Backend;
use wgllm::op::Op;
use wgllm::parity::case::Case;
use wgllm::parity::cases;

/// Teeth: known bugs put into a kernel must turn named parity cases red, and only those. Each
/// trial runs one case on a wgpu adapter with the bug in and passes when the verdict is the
/// expected one (an unexpected green means the case lost its teeth):
///   teeth::chunk_boundary_off_by_one::gdn_chunked[..]   shaders/gdn_chunk_scan.wgsl patched to
///       decay the carried state by the gate of the token before the chunk's last: every case of
///       T >= 64 (a chunk boundary reached) red, shorter ones green (their last chunk ends in
///       padding, whose gate is 0);
///   teeth::rms_norm_eps_dropped::rms_norm[..]            shaders/wg_sum.wgsl (the norms' shared
///       1/rms) patched to drop
///       eps: the eps = 1e-1 cases red, the eps = 1e-6 ones green (below f32 rounding there);
///   teeth::out_dtype_from_input::gated_attention[..]     the output declared with the INPUT's
///       dtype over the output's buffer region (the known launch bug: bf16 bits written through
///       f32 pointers): every case whose output dtype differs from its input's red;
///   teeth::min_p_tie_dropped::min_p[..]                  shaders/min_p.wgsl patched to keep only
///       logits strictly above the threshold: every case with a row whose margin is finite (its
///       planted ties at m - margin, or its +inf maximum) red, the one-row case (min-p off: the
///       row copied) green;
///   teeth::repetition_sides_swapped::penalties[..]       shaders/penalties.wgsl patched to divide
///       the negative logits and multiply the positive ones: every case with a row whose
///       repetition penalty is on red, the one-row case (its row all off) green.
///   teeth::fresh_state_read::{causal_conv1d_batch,gdn_batch}[..]   the batch kernels patched to
///       read a fresh sequence's slot instead of starting from zero: every case with a fresh
///       sequence red (its slot holds NaN), the others green. A lone gdn_batch prefill (one
///       sequence over one slot) runs wgpu's chunk kernels: lone_fresh_state_read patches
///       gdn_chunk_slot.wgsl so, and chunk_boundary_off_by_one turns its cases of 64 tokens or
///       more red.
///   teeth::combine_first_partition_dropped::paged_attention[..]   shaders/paged_attention_rows
///       .wgsl's combine patched to add a row's key partitions from the second on: every case with
///       a row over 64 keys (two partitions or more) red, the others green (the combine never runs
///       for them), but a lone decode step (one dispatch, paged_attention_lone.wgsl: below);
///       paged_gated_attention's too (it runs paged_attention's kernels on wgpu).
///   teeth::norm_row_length_short::add_rms_norm_linear[..]   shaders/matvec_norm.wgsl patched to
///       take the mean of squares over K - 2 elements: every case red.
///   teeth::norm_unit_offset_dropped::add_rms_norm_linear[..]   matvec_norm.wgsl's 1 + w patched
///       to w: the cases with a 1 + w norm weight red, the others green.
///   teeth::norm_swiglu_sign_flipped::add_rms_norm_linear[..]   matvec.wgsl's swiglu epilogue
///       patched to silu(-gate): the cases with the epilogue red, the others green.
///   teeth::norm_swiglu_first_pair_only::add_rms_norm_linear[..]   matvec.wgsl's swiglu epilogue
///       patched to store a workgroup's first (gate, up) pair only: the one-row swiglu cases
///       with rows below 2048 elements red (their tuned workgroup holds two pairs: tuning.rs
///       `swiglu_norm_r`), the others green.
///   teeth::qmatvec_swiglu_pair_swapped::linear_swiglu[..]   shaders/qmatvec.wgsl's swiglu
///       epilogue patched to take the up row as the gate: every quantized decode case red.
///   The same three as add_rms_norm_linear's for a block-quantized weight (the quantized matvec
///   reading x through shaders/qx_norm.wgsl): qnorm_row_length_short and qnorm_unit_offset_dropped
///   patch qx_norm.wgsl, qnorm_swiglu_sign_flipped qmatvec.wgsl's epilogue; qnorm_sum_b_dropped
///   makes qx_norm.wgsl store a as the sum instead of a + b: every case red (its sum output); and
///   qnorm_v4_b_as_a makes its 16-byte loads read a in place of b: the cases on the vec4 lanes
///   (q4_k, q8_0 rows on 16 bytes) with an f32 norm weight red, the element loads' cases green.
///   A case the device refuses (a q4_k matrix on the integer-dot lanes) is skipped.
///   teeth::residual_index_off_by_one / qresidual_index_off_by_one::linear_add[..]   matvec.wgsl's
///       (qmatvec.wgsl's) residual epilogue patched to add the next output's residual: every case
///       red (a q4_k matrix the integer-dot lanes may take is refused and skipped).
///   teeth::norm_pair_second_dropped / qnorm_vec4s_swapped::rms_norm_linear[..]   the norm without
///       the add reading the first of a pair twice (matvec_norm.wgsl) or neighbouring vec4s swapped
///       (qx_norm.wgsl): every case red; and add_rms_norm_linear's 1 + w and swiglu teeth on these
///       kernels: the cases with a 1 + w norm weight (quantized) or the epilogue (float) red.
///   teeth::qweight_base_dropped::linear[..]   shaders/qdots.wgsl's row addresses patched to drop
///       the weight's byte offset in its buffer: every quantized decode case (M < 64, K < 2048)
///       red: the parity runner puts guard blocks before every quantized input (eight of the
///       34-, 18- and 210-byte types, so their views start on 16 bytes).
///   teeth::split_partial_dropped::linear_add_rms_norm[..]   shaders/linear_add_rms_norm.wgsl
///       patched to read the second split-K partial in place of every later one: every case red where
///       a device runs the op (an adapter with cooperative matrices: its projection is split);
///       elsewhere the op is refused and the trial skipped.
///   teeth::split_partial_dropped::linear_rms_norm_rope_kv[..]   shaders/linear_rms_norm_rope_kv
///       .wgsl patched the same way: every case red where a device runs the op, skipped elsewhere.
///   teeth::key_norm_partials_halved::paged_gated_attention[..]   shaders/paged_gated_attention_kv
///       .wgsl patched to sum the key norm's partials of half the workgroup only: every case red
///       but a lone decode step, which writes its key in one kernel (below).
///   teeth::gate_sign_flipped / query_norm_offset_dropped::paged_gated_attention[..]   the split's
///       paged_gated_out.wgsl with sigmoid(-gate), paged_gated_q.wgsl with the query norm's
///       weight without its 1 +: every case red but a lone decode step and a group of more than
///       MAX_GROUP query heads, which takes the per-row kernel (paged_gated_attention.wgsl):
///       row_gate_sign_flipped patches its gate so and turns those red.
///   teeth::lone_gate_sign_flipped / lone_key_norm_offset_dropped::paged_gated_attention[..]
///       shaders/paged_attention_lone_gated.wgsl with sigmoid(-gate), or the key norm's weight
///       without its 1 +: the lone decode steps red (of a group paged_attention takes), every
///       other case green.
///   teeth::lone_first_partition_dropped::paged_attention[..]   shaders/paged_attention_lone.wgsl
///       patched so that its last workgroup combines a row's key partitions from the second on
///       (the last twice): the lone decode steps of more than one partition (32 keys, 16 past
///       head_dim 128) red, every other case green; paged_gated_attention's too.
///   teeth::fused_rope_sign_flipped / fused_kv_write_dropped::{rms_norm_rope_kv_attention,
///       paged_gated_attention}[..]   shaders/paged_attention_lone_rope.wgsl patched to rotate the
///       first half the other way, or never to write the new key and value to the pools: every
///       rms_norm_rope_kv_attention case red, and the gated op's lone decode steps.
///   teeth::lone_output_columns_folded::rms_norm_rope_kv_attention[..]
///       shaders/paged_attention_lone.wgsl's output sum patched to read every column's partials
///       from column c4 % 8: every case red.
/// A patched tooth copies shaders/ into a temporary directory, patches one file there and opens
/// the adapters on that directory (`WgpuBackend::all_with_shader_dir`); a patch whose target text
/// is gone fails every trial of that tooth.
pub fn teeth(wgpu: &[Arc<WgpuBackend>]) -> Vec<Trial> {
    let chunk = Arc::new(Patched::new(
        "chunk_boundary_off_by_one",
        "gdn_chunk_scan.wgsl",
        "let glast = gv[C - 1u];",
        "let glast = gv[C - 2u];",
    ));
    let eps = Arc::new(Patched::new(
        "rms_norm_eps_dropped",
        "wg_sum.wgsl",
        "/ f32(p.d) + p.eps)",
        "/ f32(p.d))",
    ));
    let tie = Arc::new(Patched::new(
        "min_p_tie_dropped",
        "min_p.wgsl",
        "k >= keep_from && k > 1u",
        "k > keep_from && k > 1u",
    ));
    let sides = Arc::new(Patched::new(
        "repetition_sides_swapped",
        "penalties.wgsl",
        "select(ld_params(4u * r), ld_params(4u * r + 1u), l > 0.0)",
        "select(ld_params(4u * r + 1u), ld_params(4u * r), l > 0.0)",
    ));
    let conv_fresh = Arc::new(Patched::new(
        "fresh_state_read",
        "causal_conv1d_batch.wgsl",
        "if (d.w != 0u) {",
        "if (d.w == 2u) {",
    ));
    let gdn_fresh = Arc::new(Patched::new(
        "fresh_state_read",
        "gdn_batch.wgsl",
        "let fresh = ld_seqs(sq * 4u + 3u) != 0u;",
        "let fresh = ld_seqs(sq * 4u + 3u) == 2u;",
    ));
    let gdn_norm_len = Arc::new(Patched::new(
        "gdn_norm_mean_over_half_dv",
        "gdn_conv_norm.wgsl",
        "sqrt(ss / f32(p.dv) + p.eps)",
        "sqrt(ss / f32(p.dv / 2u) + p.eps)",
    ));
    let gdn_norm_last = Arc::new(Patched::new(
        "gdn_norm_row_shifted",
        "gdn_conv_norm.wgsl",
        "st_o(hd * p.dv + c, ",
        "st_o(hd * p.dv + (c + 1u) % p.dv, ",
    ));
    let conv_inside_max = wgllm::backend::wgpu::Tuning::defaults().gdn_conv_inside_max;
    let conv_taps = Arc::new(Patched::new(
        "conv_taps_reversed",
        "gdn_tile_conv.wgsl",
        "s = fma(wv[j], xv[j], s);",
        "s = fma(wv[j], xv[KM1 - j], s);",
    ));
    let conv_k_state = Arc::new(Patched::new(
        "conv_k_state_unwritten",
        "gdn_tile_conv.wgsl",
        "conv_store(p.nk * DK + kh * DK + tid, keep_k);",
        "conv_store(p.nk * DK + kh * DK + tid, keep_q);",
    ));
    let conv_fresh_in = Arc::new(Patched::new(
        "fresh_state_read",
        "gdn_tile_conv.wgsl",
        "select(from_pool, 0.0, seq_fresh)",
        "select(from_pool, 0.0, seq_fresh && false)",
    ));
    let slot_fresh = Arc::new(Patched::new(
        "lone_fresh_state_read",
        "gdn_chunk_slot.wgsl",
        "if (ld_seqs(3u) != 0u) {",
        "if (ld_seqs(3u) == 2u) {",
    ));
    let draw = Arc::new(Patched::new(
        "sample_top_k_ignored",
        "sample.wgsl",
        "if (top_k != 0u && top_k < p.v) {",
        "if (top_k != 0u && top_k < 1u) {",
    ));
    let carry = Arc::new(Patched::new(
        "sample_mass_carry_dropped",
        "sample.wgsl",
        "atomicAdd(&h_hi[d], w.y + select(0u, 1u, old + w.x < old));",
        "atomicAdd(&h_hi[d], w.y);",
    ));
    let norm_len = Arc::new(Patched::new(
        "norm_row_length_short",
        "matvec_norm.wgsl",
        "ss / f32(p.k) + bitcast<f32>(p._pad0)",
        "ss / f32(p.k - 2u) + bitcast<f32>(p._pad0)",
    ));
    let norm_unit = Arc::new(Patched::new(
        "norm_unit_offset_dropped",
        "matvec_norm.wgsl",
        "return 1.0 + w;",
        "return w;",
    ));
    let norm_swiglu = Arc::new(Patched::new(
        "norm_swiglu_sign_flipped",
        "matvec.wgsl",
        "g / (1.0 + exp(-g)) * y_of((r + 1u) * MR + i, i)",
        "g / (1.0 + exp(g)) * y_of((r + 1u) * MR + i, i)",
    ));
    let norm_pair = Arc::new(Patched::new(
        "norm_swiglu_first_pair_only",
        "matvec.wgsl",
        "if (n + 1u < p.n) {",
        "if (n + 1u < p.n && r == 0u) {",
    ));
    let qswiglu = Arc::new(Patched::new(
        "qmatvec_swiglu_pair_swapped",
        "qmatvec.wgsl",
        "let g = y_of(2u * lid);",
        "let g = y_of(2u * lid + 1u);",
    ));
    let qnorm_len = Arc::new(Patched::new(
        "qnorm_row_length_short",
        "qx_norm.wgsl",
        "ss / f32(p.k) + bitcast<f32>(p._p0)",
        "ss / f32(p.k - 2u) + bitcast<f32>(p._p0)",
    ));
    let qnorm_unit = Arc::new(Patched::new(
        "qnorm_unit_offset_dropped",
        "qx_norm.wgsl",
        "w += vec4<f32>(1.0);",
        "w += vec4<f32>(0.0);",
    ));
    let qnorm_swiglu = Arc::new(Patched::new(
        "qnorm_swiglu_sign_flipped",
        "qmatvec.wgsl",
        "g / (1.0 + exp(-g)) * y_of(2u * lid + 1u)",
        "g / (1.0 + exp(g)) * y_of(2u * lid + 1u)",
    ));
    let qnorm_sum = Arc::new(Patched::new(
        "qnorm_sum_b_dropped",
        "qx_norm.wgsl",
        "put_sum(e, t);",
        "put_sum(e, a4(e));",
    ));
    let qbase = Arc::new(Patched::new(
        "qweight_base_dropped",
        "qdots.wgsl",
        "let rb = p.wbase + min(n0 + i, p.n - 1u) * p.rowb;",
        "let rb = min(n0 + i, p.n - 1u) * p.rowb;",
    ));
    let qnorm_v4 = Arc::new(Patched::new(
        "qnorm_v4_b_as_a",
        "qx_norm.wgsl",
        "b_v4[(p.offs[0].w + e) >> 2u]",
        "x_v4[(p.offs[0].x + e) >> 2u]",
    ));
    let radd = Arc::new(Patched::new(
        "residual_index_off_by_one",
        "matvec.wgsl",
        "r_pre.x = ld_r(m * p.n + n);",
        "r_pre.x = ld_r(m * p.n + n + 1u);",
    ));
    let qradd = Arc::new(Patched::new(
        "qresidual_index_off_by_one",
        "qmatvec.wgsl",
        "r_pre = ld_r(mi * p.n + n0 + lid);",
        "r_pre = ld_r(mi * p.n + n0 + lid + 1u);",
    ));
    let nonadd = Arc::new(Patched::new(
        "norm_pair_second_dropped",
        "matvec_norm.wgsl",
        "return vec2<f32>(ld_x(e), ld_x(e + 1u));",
        "return vec2<f32>(ld_x(e), ld_x(e));",
    ));
    let qnonadd = Arc::new(Patched::new(
        "qnorm_vec4s_swapped",
        "qx_norm.wgsl",
        "let t = a4(e);",
        "let t = a4(e ^ 4u);",
    ));
    let split_sum = Arc::new(Patched::new(
        "split_partial_dropped",
        "linear_add_rms_norm.wgsl",
        "return ld_x(s * p.rows * p.d + i);",
        "return ld_x(min(s, 1u) * p.rows * p.d + i);",
    ));
    let split_sum_kv = Arc::new(Patched::new(
        "split_partial_dropped",
        "linear_rms_norm_rope_kv.wgsl",
        "return ld_part(s * p.t * (p.hq + 2u * p.hkv) * p.d + i);",
        "return ld_part(min(s, 1u) * p.t * (p.hq + 2u * p.hkv) * p.d + i);",
    ));
    let paged = PagedTeeth::new();
    let mut trials = Vec::new();
    for case in cases::all() {
        // the sampling cases cycle their rows' parameters from the off values: one row is all off
        let rows = case.inputs[0].desc.shape[0];
        let bites: Vec<(Tooth, bool)> = match &case.op {
            Op::MinP => vec![(Tooth::Patched(tie.clone()), rows > 1)],
            // row 5 (hot, top-k 5, u near 1) draws past its fifth token without the cut; the rows
            // with many weighted tokens carry into the high word of a histogram bin. The `parts`
            // cases place their maxima by hand about the head's parts: row 5's draw stays inside
            // its top five there, and the all-greedy one never draws at all.
            Op::Sample { .. } => {
                let placed = case.id.contains("[parts");
                let greedy = case.id.contains("greedy");
                vec![
                    (Tooth::Patched(draw.clone()), !placed && rows >= 6),
                    (
                        Tooth::Patched(carry.clone()),
                        !greedy && rows >= 7 && case.inputs[0].desc.shape[1] >= 1000,
                    ),
                ]
            }
            Op::Penalties => vec![(Tooth::Patched(sides.clone()), rows > 1)],
            Op::GdnChunked => vec![(
                Tooth::Patched(chunk.clone()),
                case.inputs[0].desc.shape[0] >= wgllm::op::GDN_CHUNK,
            )],
            Op::RmsNorm { eps: e, .. } => vec![(Tooth::Patched(eps.clone()), *e >= 1e-2)],
            Op::AddRmsNormLinear {
                unit_offset, swiglu, ..
            } if case.inputs[3].desc.dtype.is_quant() => vec![
                (Tooth::Patched(qnorm_len.clone()), true),
                (Tooth::Patched(qnorm_unit.clone()), *unit_offset),
                (Tooth::Patched(qnorm_swiglu.clone()), *swiglu),
                (Tooth::Patched(qnorm_sum.clone()), true),
                // the vec4 lanes: q4_k and q8_0 rows on 16 bytes (every case's weight starts on
                // 16 bytes: the runner's guard blocks before it)
                (Tooth::Patched(qnorm_v4.clone()), {
                    let w = &case.inputs[3].desc;
                    matches!(w.dtype, wgllm::dtype::DType::Q4K | wgllm::dtype::DType::Q8_0)
                        && w.dtype.nbytes(w.shape[1]) % 16 == 0
                        && case.inputs[2].desc.dtype == wgllm::dtype::DType::F32
                }),
            ],
            Op::AddRmsNormLinear {
                unit_offset, swiglu, ..
            } => vec![
                (Tooth::Patched(norm_len.clone()), true),
                (Tooth::Patched(norm_unit.clone()), *unit_offset),
                (Tooth::Patched(norm_swiglu.clone()), *swiglu),
                // a one-row step's tuned workgroup holds two (gate, up) pairs below 2048 columns
                (Tooth::Patched(norm_pair.clone()), {
                    let x = &case.inputs[0].desc.shape;
                    *swiglu && x[0] == 1 && x[1] < 2048
                }),
            ],
            // a quantized W's decode rows read their blocks through qdots.wgsl's row addresses on
            // every adapter (a prefill may take the tensor cores, and K = 2048 the limb lanes), and
            // every case's W is a view past block 0 (the runner's guard blocks before it)
            Op::Linear if case.inputs[1].desc.dtype.is_quant() => {
                let (m, k) = (case.inputs[0].desc.shape[0], case.inputs[0].desc.shape[1]);
                if m >= 64 || k >= 2048 {
                    continue;
                }
                vec![(Tooth::Patched(qbase.clone()), true)]
            }
            // a quantized W's decode rows take the qmatvec's epilogue on every adapter (a prefill
            // may take the tensor cores, and K = 2048 the limb lanes, without it: no bite there)
            Op::LinearSwiGlu if case.inputs[1].desc.dtype.is_quant() => {
                let (m, k) = (case.inputs[0].desc.shape[0], case.inputs[0].desc.shape[1]);
                if m >= 64 || k >= 2048 {
                    continue;
                }
                vec![(Tooth::Patched(qswiglu.clone()), true)]
            }
            // where a device runs the op at all, its projection is split (two partials or more)
            Op::LinearAddRmsNorm { .. } => vec![(Tooth::Patched(split_sum.clone()), true)],
            Op::LinearAdd if case.inputs[1].desc.dtype.is_quant() => vec![(Tooth::Patched(qradd.clone()), true)],
            Op::LinearAdd => vec![(Tooth::Patched(radd.clone()), true)],
            Op::RmsNormLinear { unit_offset, .. } if case.inputs[2].desc.dtype.is_quant() => vec![
                (Tooth::Patched(qnonadd.clone()), true),
                (Tooth::Patched(qnorm_unit.clone()), *unit_offset),
            ],
            Op::RmsNormLinear { swiglu, .. } => vec![
                (Tooth::Patched(nonadd.clone()), true),
                (Tooth::Patched(norm_swiglu.clone()), *swiglu),
            ],
            Op::LinearRmsNormRopeKv { .. } => vec![(Tooth::Patched(split_sum_kv.clone()), true)],
            Op::GatedAttention { .. } if case.inputs[0].desc.dtype != case.outputs[0].dtype => {
                vec![(Tooth::OutDtypeFromInput, true)]
            }
            Op::PagedAttention { .. } | Op::PagedGatedAttention { .. } | Op::RmsNormRopeKvAttention { .. } => {
                paged.bites(&case)
            }
            Op::CausalConv1dBatch => vec![(Tooth::Patched(conv_fresh.clone()), any_fresh(&case, 2))],
            Op::GdnBatch | Op::GdnConvNorm { .. } => {
                // one sequence of several tokens over a pool of one slot: wgpu's lone prefill
                // (invariance off, the parity runner's default) on the chunk kernels instead
                // (gdn_conv_norm's then with the conv before and rms_norm_gated after them)
                let t = case.inputs[0].desc.shape[0];
                let sq = if case.op == Op::GdnBatch { 5 } else { 6 };
                let lone = case.inputs[sq].desc.shape[0] == 1 && case.outputs[1].shape[0] == 1 && t > 1;
                let mut v = vec![
                    (Tooth::Patched(gdn_fresh.clone()), !lone && any_fresh(&case, sq)),
                    (Tooth::Patched(slot_fresh.clone()), lone && any_fresh(&case, sq)),
                    (Tooth::Patched(chunk.clone()), lone && t >= wgllm::op::GDN_CHUNK),
                ];
                // gdn_conv_norm's own kernel runs a decode batch (a token a sequence); every
                // other batch takes the composition
                // (the conv inside it up to gdn_conv_inside_max sequences, else its own dispatch)
                if case.op != Op::GdnBatch {
                    let decode = case.inputs[sq].desc.shape[0] == t;
                    let inside = decode && t <= conv_inside_max;
                    v.push((Tooth::Patched(gdn_norm_len.clone()), decode));
                    v.push((Tooth::Patched(gdn_norm_last.clone()), decode));
                    v.push((Tooth::Patched(conv_taps.clone()), inside));
                    v.push((Tooth::Patched(conv_k_state.clone()), inside));
                    v.push((Tooth::Patched(conv_fresh_in.clone()), inside && any_fresh(&case, sq)));
                }
                v
            }
            _ => continue,
        };
        let case = Arc::new(case);
        for (tooth, expect_red) in bites {
            for dev in wgpu {
                let (case, dev, tooth) = (case.clone(), dev.clone(), tooth.clone());
                let name = format!("teeth::{}::{}::{}", tooth.tag(), case.id, dev.name());
                trials.push(Trial::ignorable_test(name, move || {
                    bite(&case, &dev, &tooth, expect_red)
                }));
            }
        }
    }
    // the invariance check itself: a kernel whose rounding depends on the batch size (invisible to
    // the parity tolerance) and one whose chunk rows see the chunk's later keys must turn it red
    let batch_rounding = Arc::new(Patched::new(
        "batch_dependent_rounding",
        "paged_attention_rows.wgsl",
        "q_s[i] = ld4_q(orow + i * 4u) * p.scale;",
        "q_s[i] = ld4_q(orow + i * 4u) * (p.scale * (1.0 + f32(p.t & 1u) * 1.2e-7));",
    ));
    // the hybrid-state ops' invariance: a rounding that depends on the batch's row count, and one
    // that depends on how many tokens of its sequence a workgroup runs (the chunking), both far
    // below the parity tolerance, must turn it red
    let gdn_batch_rounding = Arc::new(Patched::new(
        "gdn_batch_dependent_rounding",
        "gdn_recurrent_tile.wgsl",
        "let qscale = 1.0 / sqrt(f32(DK));",
        "let qscale = (1.0 + f32(p.t & 1u) * 1.2e-7) / sqrt(f32(DK));",
    ));
    let gdn_chunk_rounding = Arc::new(Patched::new(
        "gdn_chunk_dependent_rounding",
        "gdn_recurrent_tile.wgsl",
        "let dtb = ld_dt_bias(h);",
        "let dtb = ld_dt_bias(h) * (1.0 + f32(nt & 1u) * 1.2e-7);",
    ));
    for patch in [gdn_batch_rounding, gdn_chunk_rounding] {
        for dev in wgpu {
            let (patch, dev) = (patch.clone(), dev.clone());
            let name = format!("teeth::{}::state_invariance[gdn_batch]::{}", patch.tag, dev.name());
            trials.push(Trial::ignorable_test(name, move || {
                let d = patch.device(&dev.name())?;
                match wgllm::parity::state_invariance::check(d.as_ref()) {
                    Err(m) => {
                        println!("    red as expected: {m}");
                        Ok(Completion::Completed)
                    }
                    Ok(m) => Err(Failed::from(format!("passed with the bug in ({m}): no teeth"))),
                }
            }));
        }
    }
    for patch in [batch_rounding, paged.causal.clone()] {
        for dev in wgpu {
            let (patch, dev) = (patch.clone(), dev.clone());
            let name = format!(
                "teeth::{}::paged_invariance[paged_attention,kvf32]::{}",
                patch.tag,
                dev.name()
            );
            trials.push(Trial::ignorable_test(name, move || {
                let d = patch.device(&dev.name())?;
                match wgllm::parity::paged_invariance::check(d.as_ref(), wgllm::dtype::DType::F32, false) {
                    Err(m) => {
                        println!("    red as expected: {m}");
                        Ok(Completion::Completed)
                    }
                    Ok(m) => Err(Failed::from(format!("passed with the bug in ({m}): no teeth"))),
                }
            }));
        }
    }
    trials
}

/// Whether a hybrid-state case (its descriptor is input `k`) has a sequence that starts fresh.
fn any_fresh(case: &Case, k: usize) -> bool {
    match &case.inputs[k].init {
        wgllm::parity::case::Init::U32s(v) => v.chunks(4).any(|f| f[3] == 1),
        other => panic!("{}: seqs is not explicit u32s: {other:?}", case.id),
    }
}
