//! attention: causal GQA attention over a KV cache. shaders/attention.wgsl (Params), then
//!   T == 1: shaders/attention_decode.wgsl, one workgroup per (query, query head), keys split
//!           over the workgroup's threads and combined in workgroup memory.
//!   T > 1:  shaders/attention_prefill.wgsl, one workgroup per (query block, query head),
//!           key blocks staged in workgroup memory, online softmax (flash-attention style).
//! The key loops are shaders/attention_decode_loop.wgsl and attention_prefill_loop.wgsl, shared
//! with gated_attention (gated_attention.rs), as is the launch plan here (`plan`): head_dim is a
//! compile-time constant (in the variant); the prefill tile shape is `SPLIT_TILES`' pick (or
//! `PAIR_TILE`, two query heads of a kv group a workgroup, where the groups pair up and its
//! workgroups fill the GPU) on a device with subgroups of 8 or more and the workgroup memory for
//! both, else the largest of `TILES` whose workgroup memory fits.
use super::attention_parts;
use super::attention_prefill::{prefill_source, splits, Tile};
use super::kernel::{grid, read, write, Binding, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

/// Decode workgroup size (keys per chunk). head_dim / 4 must not exceed it.
pub(super) const DECODE_NT: usize = 256;
/// Prefill tiles (attention_prefill.rs: NT threads, BQ query rows, BK keys a block, TN keys a
/// thread in the score tile), most preferred first; the first whose workgroup memory fits the
/// device is taken (then perhaps a narrower one: FILL_WORKGROUPS). 64 query rows share each
/// staged key block where head_dim 128 fits (48 KiB on NVIDIA's Vulkan); the smaller ones keep
/// head_dim 256 and 32 KiB devices (lavapipe) going.
/// Each is `valid` (a test checks), with BQ, BK <= NT (gated_attention prepares one staged row per
/// thread).
pub(super) const TILES: [Tile; 4] = [
    Tile {
        nt: 128,
        bq: 64,
        bk: 16,
        tn: 2,
        kp: 0,
        hg: 1,
    },
    Tile {
        nt: 128,
        bq: 32,
        bk: 16,
        tn: 2,
        kp: 0,
        hg: 1,
    },
    Tile {
        nt: 128,
        bq: 32,
        bk: 8,
        tn: 1,
        kp: 0,
        hg: 1,
    },
    Tile {
        nt: 128,
        bq: 16,
        bk: 8,
        tn: 1,
        kp: 0,
        hg: 1,
    },
];

/// Same layout for both kernels.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    shape: Shape,
}
const _: () = assert!(std::mem::size_of::<Params>() == 64);

/// The fields both attention Params start with after `offs` (attention.wgsl and
/// gated_attention.wgsl declare them flat, in this order).
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct Shape {
    t: u32,
    hq: u32,
    hkv: u32,
    dh: u32,
    n_past: u32,
    group: u32,
    scale: f32,
    nqb: u32,
}
const _: () = assert!(std::mem::size_of::<Shape>() == 32);

impl Plan {
    /// Params' shape fields for T queries over Hq query heads (GQA groups of Hq / Hkv).
    pub fn shape(&self, t: usize, hq: usize, hkv: usize, dh: usize, n_past: usize, scale: f32) -> Shape {
        Shape {
            t: t as u32,
            hq: hq as u32,
            hkv: hkv as u32,
            dh: dh as u32,
            n_past: n_past as u32,
            group: (hq / hkv) as u32,
            scale,
            nqb: self.nqb as u32,
        }
    }
}

/// (T, Hq, Hkv, Dh) of q [T, Hq, Dh] and k [S, Hkv, Dh].
fn dims(q: &[usize], k: &[usize]) -> (usize, usize, usize, usize) {
    (q[0], q[1], k[1], q[2])
}

/// Below this many workgroups (query blocks x query heads) a prefill takes the next tile that
/// differs only in having fewer query rows: a 64-row tile would leave most of a large GPU idle at
/// short prompts (T = 512 with 16 heads: 128 workgroups of 4 warps for the H200's 132 SMs). In
/// TILES, same keys a block and a thread means the same order of sums for every row whichever is
/// picked; SPLIT_TILES' two differ in keys a block (the softmax's running sums), so a row's bits
/// there depend on which one T picks, as they do on key partitions.
const FILL_WORKGROUPS: usize = 256;

/// Whether `t` queries over `hq` heads on tile `tl` make fewer workgroups than FILL_WORKGROUPS:
/// the GPU partly idle (a narrower tile, or key partitions, then help).
fn leaves_idle(t: usize, tl: &Tile, hq: usize) -> bool {
    tl.workgroups(t, hq) < FILL_WORKGROUPS
}

/// The first tile whose workgroup memory fits the device.
fn tile(b: &WgpuBackend, dh: usize) -> Option<Tile> {
    TILES
        .into_iter()
        .find(|t| t.smem(dh) <= b.caps.max_workgroup_storage as usize)
}

/// Tiles for a device where both run the split score (attention_prefill.rs `Split`: subgroups of
/// 8 or more): the 64-row 8-key tile where its workgroups fill the GPU, else the 32-row 16-key
/// tile. At head_dim 128 on an H100 (f32 K/V, GPU us a layer, Hq 16): T 2048 747.9 and 987.8
/// against TILES[0]'s 827.6 keys-across; T 512 101.1 and 77.6 against TILES' 86.9.
pub(super) const SPLIT_TILES: [Tile; 2] = [
    Tile {
        nt: 128,
        bq: 64,
        bk: 8,
        tn: 1,
        kp: 0,
        hg: 1,
    },
    TILES[1],
];

/// SPLIT_TILES[0] with the two query heads of a kv group in one workgroup (64 rows each): each
/// staged key and value block serves 128 query rows, so a query row costs half the staging loads
/// (global reads that took about a quarter of the split tile's time), while each thread's work is
/// SPLIT_TILES[0]'s (so are its rows' bits). Its rows' queries sit in registers, not in workgroup
/// memory: kernels that prepare the Q tile in place (gated_attention) take one head a workgroup.
pub(super) const PAIR_TILE: Tile = Tile {
    nt: 256,
    bq: 128,
    hg: 2,
    ..SPLIT_TILES[0]
};

/// SPLIT_TILES' pick for T queries over Hq heads in kv groups of `group`, where `b` runs both
/// split and the first fits: PAIR_TILE where the groups pair up and its workgroups fill the GPU.
fn split_tile(b: &WgpuBackend, dh: usize, t: usize, hq: usize, group: usize) -> Option<Tile> {
    let fits = |tl: &Tile| tl.smem(dh) <= b.caps.max_workgroup_storage as usize && splits(b, *tl, dh);
    if !SPLIT_TILES.iter().all(fits) {
        return None;
    }
    let pair = PAIR_TILE;
    if group % pair.hg == 0 && fits(&pair) && pair.nt <= b.caps.max_invocations as usize && !leaves_idle(t, &pair, hq) {
        return Some(pair);
    }
    Some(SPLIT_TILES[leaves_idle(t, &SPLIT_TILES[0], hq) as usize])
}

/// The tile for T queries over Hq heads (kv groups of `group`; 1 where the kernel takes one head a
/// workgroup): `split_tile` where the device takes it; else `tile`, or a narrower one of the same
/// key shape while the workgroups number fewer than FILL_WORKGROUPS.
fn tile_for(b: &WgpuBackend, dh: usize, t: usize, hq: usize, group: usize) -> Option<Tile> {
    if let Some(tl) = split_tile(b, dh, t, hq, group) {
        return Some(tl);
    }
    let mut pick = tile(b, dh)?;
    for next in TILES {
        let same_keys = (next.bk, next.tn, next.nt) == (pick.bk, pick.tn, pick.nt);
        if same_keys && next.bq < pick.bq && leaves_idle(t, &pick, hq) {
            pick = next;
        }
    }
    Some(pick)
}

/// Workgroup memory of decode_attend in bytes: q_s, sc_s, red_s, acc_s.
pub(super) fn decode_smem(dh: usize) -> usize {
    4 * dh + 4 * DECODE_NT + 4 * 16 + 16 * DECODE_NT
}

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (t, hq, _hkv, dh) = dims(&desc.inputs[0].shape, &desc.inputs[1].shape);
    if dh == 0 || dh % 4 != 0 {
        return Support::No(format!("head_dim {dh} must be a positive multiple of 4 (vec4 kernels)"));
    }
    if t == 0 || hq == 0 {
        return Support::No("empty attention (T or Hq is 0)".into());
    }
    supports_kernels(b, desc, t, dh, decode_smem(dh))
}

/// What both attention ops check last: u32 indexing, then the workgroup memory and invocations of
/// the kernel T selects; `decode_smem` is the decode kernel's workgroup memory in bytes.
pub(super) fn supports_kernels(b: &WgpuBackend, desc: &OpDesc, t: usize, dh: usize, decode_smem: usize) -> Support {
    let words = desc
        .inputs
        .iter()
        .chain(&desc.outputs)
        .map(|d| d.numel())
        .max()
        .unwrap_or(0);
    if words as u64 >= u32::MAX as u64 {
        return Support::No(format!("{words} elements overflow the kernels' u32 indexing"));
    }
    let smem_limit = b.caps.max_workgroup_storage as usize;
    if t == 1 {
        if dh / 4 > DECODE_NT {
            return Support::No(format!(
                "decode head_dim {dh} exceeds {} (4 x workgroup size)",
                4 * DECODE_NT
            ));
        }
        if decode_smem > smem_limit || DECODE_NT > b.caps.max_invocations as usize {
            return Support::No(format!(
                "decode head_dim {dh} needs {decode_smem} B workgroup memory, {DECODE_NT} invocations"
            ));
        }
    } else {
        if tile(b, dh).is_none() {
            let need = TILES[TILES.len() - 1].smem(dh);
            return Support::No(format!(
                "prefill head_dim {dh} needs {need} B workgroup memory, device has {smem_limit}"
            ));
        }
        let nt = tile(b, dh).map_or(0, |t| t.nt);
        if nt > b.caps.max_invocations as usize {
            return Support::No(format!("prefill needs {nt} invocations per workgroup"));
        }
    }
    Support::Yes
}

/// The kernel `record` dispatches for T queries, with its specialization.
pub(super) struct Plan {
    /// decode (T == 1; the *_decode kernel after attention_decode_loop.wgsl) or prefill (after
    /// attention_prefill_loop.wgsl)
    pub decode: bool,
    /// query blocks (1 for decode)
    pub nqb: usize,
    /// the prefill tile (None for decode) and whether it runs the `sg` variant
    pub tile: Option<(Tile, bool)>,
    /// head_dim / 4
    pub dh4: usize,
    /// key partitions of each query block (attention_parts.rs; 1: none)
    pub parts: usize,
    pub variant: String,
    pub consts: Vec<(&'static str, String)>,
}

impl Plan {
    /// The kernel's WGSL: `head` (its Params), its binding helpers, the shared key loop, then the
    /// decode or prefill kernel of `files` ([decode, prefill]).
    pub fn body(&self, b: &WgpuBackend, head: &str, helpers: &str, files: [&'static str; 2]) -> String {
        match self.tile {
            None => [
                b.source(head),
                helpers,
                b.source("attention_decode_loop.wgsl"),
                b.source(files[0]),
            ]
            .concat(),
            Some((t, sg)) => [
                b.source(head),
                helpers,
                prefill_source(b, "attention_prefill_loop.wgsl", t, self.dh4, sg),
                prefill_source(b, files[1], t, self.dh4, sg),
            ]
            .concat(),
        }
    }

    /// Dispatches `entries[0]` (decode) or `entries[1]` (prefill) from `body`, one workgroup per
    /// (query block, query head, key partition); decode has one block (T == 1).
    #[allow(clippy::too_many_arguments)]
    pub fn dispatch(
        self,
        b: &WgpuBackend,
        entries: [&'static str; 2],
        bindings: Vec<Binding>,
        body: &str,
        params: &[u8],
        tensors: &[&Tensor],
        hq: usize,
    ) -> Result<()> {
        let key = KernelKey {
            entry: entries[if self.decode { 0 } else { 1 }],
            bindings,
            variant: self.variant,
        };
        b.dispatch(
            &key,
            || (body.to_string(), self.consts.to_vec()),
            params,
            tensors,
            grid((self.nqb * hq / self.tile.map_or(1, |(t, _)| t.hg) * self.parts) as u32),
        )
    }
}

/// `pl` (a prefill's plan for T queries after n_past keys, or a bound on them) with the keys of
/// each query block in partitions (attention_parts.rs) where its query blocks alone would leave
/// the GPU idle (fewer workgroups than FILL_WORKGROUPS: a short chunk after a long cache) and the
/// keys pass PART_KEYS; else `pl` as it is.
pub(super) fn partitioned(b: &WgpuBackend, pl: Plan, t: usize, n_past: usize, hq: usize, dh: usize) -> Plan {
    match (pl.tile, attention_parts::part_keys(b, t, n_past, hq, dh)) {
        (Some((tl, _)), kp) if kp > 0 && leaves_idle(t, &tl, hq) => {
            let mut p = prefill_plan(b, Tile { kp, ..tl }, t, dh);
            p.parts = attention_parts::parts(t, n_past, kp);
            p
        }
        _ => pl,
    }
}

/// The kernel for T queries over Hq heads in kv groups of `group` (1: one head a workgroup).
pub(super) fn plan(b: &WgpuBackend, op: &Op, t: usize, hq: usize, dh: usize, group: usize) -> Result<Plan> {
    let dh4 = ("DH4", format!("{}u", dh / 4));
    if t == 1 {
        return Ok(Plan {
            decode: true,
            nqb: 1,
            tile: None,
            dh4: dh / 4,
            parts: 1,
            variant: format!("dh{dh}"),
            consts: vec![dh4, ("NT", format!("{DECODE_NT}u"))],
        });
    }
    let tl = tile_for(b, dh, t, hq, group)
        .ok_or_else(|| Error::Other(format!("{}: no prefill tile fits head_dim {dh}", op.name())))?;
    Ok(prefill_plan(b, tl, t, dh))
}

/// The prefill kernel of tile `tl` for T queries (`plan`'s pick, or a sweep's candidate).
pub(super) fn prefill_plan(b: &WgpuBackend, tl: Tile, t: usize, dh: usize) -> Plan {
    let sg = tl.sg(b);
    let mut consts = vec![("DH4", format!("{}u", dh / 4))];
    consts.extend(tl.consts());
    Plan {
        decode: false,
        nqb: t.div_ceil(tl.bqh()),
        tile: Some((tl, sg)),
        dh4: dh / 4,
        parts: 1,
        variant: tl.variant(dh, sg),
        consts,
    }
}

/// `fn ld4_{name}(i) -> vec4<f32>`: elements i..i+4 of a read binding at `slot` (i % 4 == 0
/// relative to the tensor). 16-bit words are read whole when the element offset is even.
pub(super) fn ld4(name: &str, slot: usize, dt: DType) -> String {
    ld4_with(name, slot, dt, false)
}

/// `ld4` where the caller knows the tensor's element offset is even (so is every i + offset): the
/// whole-word path alone, without the per-element one a kernel would otherwise carry (its code
/// and registers) for an odd offset.
pub(super) fn ld4_with(name: &str, slot: usize, dt: DType, even: bool) -> String {
    let off = format!("p.offs[{}u][{}u]", slot / 4, slot % 4);
    let per_elem = format!("vec4<f32>(ld_{name}(i), ld_{name}(i + 1u), ld_{name}(i + 2u), ld_{name}(i + 3u))");
    let pair = |w: &str| match dt {
        DType::F16 => format!("unpack2x16float({w})"),
        _ => format!("vec2<f32>(bitcast<f32>({w} << 16u), bitcast<f32>({w} & 0xffff0000u))"),
    };
    // the 16-bit path: the two words holding elements j..j+4 (j even)
    let words = format!(
        "let w0 = {name}_buf[j >> 1u]; let w1 = {name}_buf[(j >> 1u) + 1u]; return vec4<f32>({}, {});",
        pair("w0"),
        pair("w1")
    );
    match dt {
        DType::F32 => format!(
            "fn ld4_{name}(i: u32) -> vec4<f32> {{ let j = {off} + i; return bitcast<vec4<f32>>(vec4<u32>({name}_buf[j], {name}_buf[j + 1u], {name}_buf[j + 2u], {name}_buf[j + 3u])); }}\n"
        ),
        DType::F16 | DType::BF16 if even => format!("fn ld4_{name}(i: u32) -> vec4<f32> {{ let j = {off} + i; {words} }}\n"),
        DType::F16 | DType::BF16 => format!(
            "fn ld4_{name}(i: u32) -> vec4<f32> {{ let j = {off} + i; if ((j & 1u) == 0u) {{ {words} }} return {per_elem}; }}\n"
        ),
        _ => unreachable!("attention operands are float"),
    }
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    record_with(b, op, i, o, None)
}

/// `record`, a prefill (T > 1) on `tile` where one is given instead of `plan`'s pick (the tile
/// sweep's candidates; a tile must fit the device's workgroup memory).
pub(super) fn record_with(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor], tile: Option<Tile>) -> Result<()> {
    let Op::Attention { n_past, scale } = *op else {
        unreachable!()
    };
    let (t, hq, hkv, dh) = dims(&i[0].shape, &i[1].shape);
    let mut bindings = vec![
        read("q", i[0].dtype),
        read("k", i[1].dtype),
        read("v", i[2].dtype),
        write("o", o[0].dtype),
    ];
    // a long prefill's keys in partitions (attention_parts.rs) on plan's tile where its query
    // blocks alone would leave the GPU idle (a short chunk after a long cache: fewer workgroups
    // than FILL_WORKGROUPS); a given tile keeps its own `kp`
    let mut plan = match tile {
        Some(tl) if t > 1 => prefill_plan(b, tl, t, dh),
        _ => partitioned(b, plan(b, op, t, hq, dh, hq / hkv)?, t, n_past, hq, dh),
    };
    let kp = plan.tile.map_or(0, |(tl, _)| tl.kp);
    plan.parts = attention_parts::parts(t, n_past, kp);
    let mut helpers: String = (bindings.iter().take(3).enumerate())
        .map(|(slot, bd)| ld4(bd.name, slot, bd.dtype))
        .collect();
    let scratch = match kp {
        0 => None,
        _ => {
            bindings.push(attention_parts::binding());
            helpers += attention_parts::HELPERS;
            Some(attention_parts::scratch(b, t, n_past, hq, dh, kp)?)
        }
    };
    let body = plan.body(
        b,
        "attention.wgsl",
        &helpers,
        ["attention_decode.wgsl", "attention_prefill.wgsl"],
    );
    let p = Params {
        offs: [0; 8],
        shape: plan.shape(t, hq, hkv, dh, n_past, scale),
    };
    let mut tensors = vec![i[0], i[1], i[2], o[0]];
    tensors.extend(scratch.as_ref());
    plan.dispatch(
        b,
        ["attention_decode", "attention_prefill"],
        bindings,
        &body,
        bytemuck::bytes_of(&p),
        &tensors,
        hq,
    )?;
    match &scratch {
        Some(po) => attention_parts::merge(b, (t, hq, dh, n_past), kp, po, o[0], None),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::{SPLIT_TILES, TILES};

    /// Every tile is a shape the generated loop computes, and fits one staged row per thread.
    #[test]
    fn tiles_are_valid() {
        for t in TILES.iter().chain(&SPLIT_TILES).chain([&super::PAIR_TILE]) {
            assert!(t.valid(), "{t:?}");
        }
        // the preferred tiles fit head_dim 128 in NVIDIA Vulkan's 48 KiB
        assert!(TILES[0].smem(128) <= 48 * 1024);
        assert!(SPLIT_TILES.iter().all(|t| t.smem(128) <= 48 * 1024));
        assert!(super::PAIR_TILE.smem(128) <= 48 * 1024);
    }
}
