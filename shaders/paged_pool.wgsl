// A paged pool's key rows, for the kernels over one (paged_attention.wgsl,
// paged_attention_prefill.wgsl): their Params give bs (rows a block) and nb (blocks in the pool),
// their bindings ld_bt (block tables [S, MB]).

// This workgroup's block-table row (s * MB), set before the key loop.
var<private> tbl: u32;
// NaN, read at run time (a constant NaN would be folded away or refused by the compiler).
var<private> nan_bits: u32 = 0x7fc00000u;

const NO_ROW = 0xffffffffu;

// The pool row of the first key of key j's block (blk * PBS); NO_ROW when the block id is not in
// the pool. The block size is the constant PBS (Params.bs; the kernel's variant names it): a
// division by a runtime value is a multi-instruction sequence where a constant's is a shift or a
// multiply.
fn pool_base(j: u32) -> u32 {
    let blk = ld_bt(tbl + j / PBS);
    if (blk >= p.nb) {
        return NO_ROW;
    }
    return blk * PBS;
}

// The pool row of key j of this workgroup's sequence; NO_ROW when its block id is not in the pool.
fn pool_row(j: u32) -> u32 {
    let base = pool_base(j);
    if (base == NO_ROW) {
        return NO_ROW;
    }
    return base + j % PBS;
}
