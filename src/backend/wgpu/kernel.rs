//! Kernel sources, the generated binding prelude, and the pipeline cache.
//!
//! Every kernel binds `p: Params` (uniform) at binding 0 and its tensors at 1.. in the order the
//! family gives. The prelude generated here declares each tensor binding as a u32 array and gives
//! typed accessors that add the tensor's element offset (`p.offs`, filled in by the dispatcher):
//!   ld_x(i) -> f32 (float dtypes) or u32 (u32/i32)     st_y(i, v)   (v: f32 or u32)
//!   ldbits_x(i) / stbits_y(i, bits): raw element bits  st2_y(i, a, b) / st2bits_y: two adjacent elements
//!   as_y(v): v rounded to y's dtype in registers (the value ld_y of a stored v returns)
//! 16-bit outputs are written with atomicAnd/atomicOr on their word, so neighbouring elements
//! owned by other threads (or by another tensor) are never clobbered.
use crate::dtype::DType;
use std::fmt::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    /// Read as `{name}_v4: array<vec4<u32>>` (16-byte loads; no typed accessors): the buffer is
    /// sized in whole 16-byte units (`alloc_tensor`), the kernel adds the offsets itself.
    Read4,
    /// Written as `{name}_v4: array<vec4<u32>>` (16-byte stores of whole 4-element runs; no typed
    /// accessors, the kernel adds the offsets itself), sized like `Read4`.
    Write4,
    Write,
    /// Words read and written only through atomics (`atld_{name}(i)`, `atst_{name}(i, v)`,
    /// `atadd_{name}(i, v)`, offsets added): what one workgroup hands another inside a dispatch.
    Atomic,
    /// Read and written as plain words, 16-bit dtypes too (`Write` stores those through atomics):
    /// for a kernel that stores only whole words (st2_ at even element indices) and also reads
    /// the binding through `ld4_with`'s word loads.
    WriteWords,
}

/// One tensor binding of a kernel: its name in the WGSL body, dtype and access.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    pub name: &'static str,
    pub dtype: DType,
    pub access: Access,
}

pub fn read(name: &'static str, dtype: DType) -> Binding {
    Binding {
        name,
        dtype,
        access: Access::Read,
    }
}
pub fn read4(name: &'static str, dtype: DType) -> Binding {
    Binding {
        name,
        dtype,
        access: Access::Read4,
    }
}
pub fn write4(name: &'static str, dtype: DType) -> Binding {
    Binding {
        name,
        dtype,
        access: Access::Write4,
    }
}
pub fn atomic(name: &'static str) -> Binding {
    Binding {
        name,
        dtype: DType::U32,
        access: Access::Atomic,
    }
}
pub fn write_words(name: &'static str, dtype: DType) -> Binding {
    Binding {
        name,
        dtype,
        access: Access::WriteWords,
    }
}
pub fn write(name: &'static str, dtype: DType) -> Binding {
    Binding {
        name,
        dtype,
        access: Access::Write,
    }
}

/// The typed pipeline-cache key: entry point, its bindings' dtypes, and a variant tag
/// (e.g. workgroup size or subgroup use) that changes the generated code.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelKey {
    pub entry: &'static str,
    pub bindings: Vec<Binding>,
    pub variant: String,
}

impl KernelKey {
    /// `{entry}_{dtype...}[_{variant}]`, the label every GPU object of this kernel carries.
    pub fn label(&self) -> String {
        let mut s = self.entry.to_string();
        for b in &self.bindings {
            s.push('_');
            s.push_str(b.dtype.name());
        }
        if !self.variant.is_empty() {
            s.push('_');
            s.push_str(&self.variant);
        }
        s
    }
}

/// The full WGSL of a kernel: enables, constants, accessors, common helpers, then the family body
/// (with the embedded shaders/common.wgsl).
pub fn generate(key: &KernelKey, body: &str, consts: &[(&str, String)], enables: &[&str]) -> String {
    generate_with(super::shaders::embedded("common.wgsl"), key, body, consts, enables)
}

/// `generate` with `common` as the common helpers (a device's own copy of shaders/common.wgsl).
pub fn generate_with(common: &str, key: &KernelKey, body: &str, consts: &[(&str, String)], enables: &[&str]) -> String {
    let mut s = String::new();
    for e in enables {
        let _ = writeln!(s, "enable {e};");
    }
    for (name, val) in consts {
        let _ = writeln!(s, "const {name} = {val};");
    }
    for (k, b) in key.bindings.iter().enumerate() {
        let (n, slot) = (b.name, k + 1);
        let off = format!("p.offs[{}u][{}u]", k / 4, k % 4);
        // a quantized binding is its raw blocks as u32 words (the kernel decodes them)
        let wide = b.dtype.is_quant() || b.dtype.size() == 4;
        match b.access {
            Access::Read4 => {
                let _ = writeln!(
                    s,
                    "@group(0) @binding({slot}) var<storage, read> {n}_v4: array<vec4<u32>>;"
                );
            }
            Access::Write4 => {
                let _ = writeln!(
                    s,
                    "@group(0) @binding({slot}) var<storage, read_write> {n}_v4: array<vec4<u32>>;"
                );
            }
            Access::Atomic => {
                let _ = writeln!(
                    s,
                    "@group(0) @binding({slot}) var<storage, read_write> {n}_buf: array<atomic<u32>>;"
                );
                let _ = writeln!(
                    s,
                    "fn atld_{n}(i: u32) -> u32 {{ return atomicLoad(&{n}_buf[{off} + i]); }}"
                );
                let _ = writeln!(
                    s,
                    "fn atst_{n}(i: u32, v: u32) {{ atomicStore(&{n}_buf[{off} + i], v); }}"
                );
                let _ = writeln!(
                    s,
                    "fn atadd_{n}(i: u32, v: u32) -> u32 {{ return atomicAdd(&{n}_buf[{off} + i], v); }}"
                );
            }
            Access::Read => {
                let _ = writeln!(s, "@group(0) @binding({slot}) var<storage, read> {n}_buf: array<u32>;");
                if wide {
                    let _ = writeln!(s, "fn ldbits_{n}(i: u32) -> u32 {{ return {n}_buf[{off} + i]; }}");
                } else {
                    let _ = writeln!(s, "fn ldbits_{n}(i: u32) -> u32 {{ let j = {off} + i; return ({n}_buf[j >> 1u] >> ((j & 1u) * 16u)) & 0xffffu; }}");
                }
                let _ = writeln!(
                    s,
                    "fn ld_{n}(i: u32) -> {} {{ return {}; }}",
                    ty(b.dtype),
                    decode(b.dtype, &format!("ldbits_{n}(i)"))
                );
            }
            Access::Write | Access::WriteWords => {
                // WriteWords at 16 bits: plain words, no lone-element store (it would race with
                // the other half of its word), st2 whole words only
                let words = b.access == Access::WriteWords && !wide;
                if wide {
                    let _ = writeln!(
                        s,
                        "@group(0) @binding({slot}) var<storage, read_write> {n}_buf: array<u32>;"
                    );
                    let _ = writeln!(s, "fn stbits_{n}(i: u32, v: u32) {{ {n}_buf[{off} + i] = v; }}");
                    let _ = writeln!(s, "fn ldbits_{n}(i: u32) -> u32 {{ return {n}_buf[{off} + i]; }}");
                } else if words {
                    let _ = writeln!(
                        s,
                        "@group(0) @binding({slot}) var<storage, read_write> {n}_buf: array<u32>;"
                    );
                    let _ = writeln!(s, "fn ldbits_{n}(i: u32) -> u32 {{ let j = {off} + i; return ({n}_buf[j >> 1u] >> ((j & 1u) * 16u)) & 0xffffu; }}");
                } else {
                    let _ = writeln!(
                        s,
                        "@group(0) @binding({slot}) var<storage, read_write> {n}_buf: array<atomic<u32>>;"
                    );
                    let _ = writeln!(
                        s,
                        "fn stbits_{n}(i: u32, v: u32) {{ let j = {off} + i; let sh = (j & 1u) * 16u; \
                         atomicAnd(&{n}_buf[j >> 1u], ~(0xffffu << sh)); atomicOr(&{n}_buf[j >> 1u], (v & 0xffffu) << sh); }}"
                    );
                    let _ = writeln!(s, "fn ldbits_{n}(i: u32) -> u32 {{ let j = {off} + i; return (atomicLoad(&{n}_buf[j >> 1u]) >> ((j & 1u) * 16u)) & 0xffffu; }}");
                }
                if !words {
                    let _ = writeln!(
                        s,
                        "fn st_{n}(i: u32, v: {}) {{ stbits_{n}(i, {}); }}",
                        ty(b.dtype),
                        encode(b.dtype, "v")
                    );
                }
                let _ = writeln!(
                    s,
                    "fn ld_{n}(i: u32) -> {} {{ return {}; }}",
                    ty(b.dtype),
                    decode(b.dtype, &format!("ldbits_{n}(i)"))
                );
                // v as the binding's dtype holds it (what ld_ of a stored v gives), in registers
                let _ = writeln!(
                    s,
                    "fn as_{n}(v: {}) -> {} {{ return {}; }}",
                    ty(b.dtype),
                    ty(b.dtype),
                    decode(b.dtype, &encode(b.dtype, "v"))
                );
                if wide {
                    let _ = writeln!(
                        s,
                        "fn st2bits_{n}(i: u32, a: u32, b: u32) {{ stbits_{n}(i, a); stbits_{n}(i + 1u, b); }}"
                    );
                } else if words {
                    // j even (the kernel's contract): one whole word
                    let _ = writeln!(
                        s,
                        "fn st2bits_{n}(i: u32, a: u32, b: u32) {{ let j = {off} + i; {n}_buf[j >> 1u] = (a & 0xffffu) | ((b & 0xffffu) << 16u); }}"
                    );
                } else {
                    let _ = writeln!(
                        s,
                        "fn st2bits_{n}(i: u32, a: u32, b: u32) {{ let j = {off} + i; if ((j & 1u) == 0u) {{ \
                         atomicStore(&{n}_buf[j >> 1u], (a & 0xffffu) | ((b & 0xffffu) << 16u)); }} else {{ stbits_{n}(i, a); stbits_{n}(i + 1u, b); }} }}"
                    );
                }
                let _ = writeln!(
                    s,
                    "fn st2_{n}(i: u32, a: {t}, b: {t}) {{ st2bits_{n}(i, {ea}, {eb}); }}",
                    t = ty(b.dtype),
                    ea = encode(b.dtype, "a"),
                    eb = encode(b.dtype, "b")
                );
            }
        }
    }
    s.push_str(common);
    s.push('\n');
    s.push_str(body);
    s
}

fn ty(d: DType) -> &'static str {
    if d.is_float() {
        "f32"
    } else {
        "u32"
    }
}

fn decode(d: DType, bits: &str) -> String {
    match d {
        DType::F32 => format!("bitcast<f32>({bits})"),
        DType::F16 => format!("f16_bits_to_f32({bits})"),
        DType::BF16 => format!("bf16_bits_to_f32({bits})"),
        DType::I32 | DType::U32 => bits.to_string(),
        _ => bits.to_string(),
    }
}

fn encode(d: DType, v: &str) -> String {
    match d {
        DType::F32 => format!("bitcast<u32>({v})"),
        DType::F16 => format!("f32_to_f16_bits({v})"),
        DType::BF16 => format!("f32_to_bf16_bits({v})"),
        DType::I32 | DType::U32 => v.to_string(),
        q => panic!("no WGSL encoder for the quantized type {q}: quantized tensors are never written by kernels"),
    }
}

/// Splits `groups` workgroups into a grid within the 65535-per-dimension limit.
/// Kernels recover the linear index with `group_index(wid, nwg)` and must bounds-check it.
pub fn grid(groups: u32) -> (u32, u32, u32) {
    const MAX: u32 = 65535;
    if groups <= MAX {
        (groups.max(1), 1, 1)
    } else {
        let y = groups.div_ceil(MAX);
        (groups.div_ceil(y), y, 1)
    }
}

/// Validates generated WGSL offline with naga (used by tests and `wgllm ops`).
pub fn validate_wgsl(label: &str, src: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| format!("{label}: {}", e.emit_to_string(src)))?;
    let mut v = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all());
    v.validate(&module).map_err(|e| format!("{label}: {e:?}"))?;
    Ok(())
}
