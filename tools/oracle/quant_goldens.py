#!/usr/bin/env python3
"""Oracle goldens for the GGUF block-quantized types (goldens/quant-<type>/).

The oracle is the `gguf` Python package (pinned in requirements.txt): its numpy dequantizers (and,
for q8_0, q4_0 and q4_1, its quantizers, which follow ggml's reference rounding) define the bytes
the Rust CPU reference (src/quant/) must reproduce bit for bit (tests/quant.rs).

Per type it writes:
  blocks.bin       raw blocks: seeded random blocks (sane scales, then wide-range scales) and named
                   edge cases (zero / -0 / negative / subnormal / largest f16 scales, all-0x00 and
                   all-0xFF quant bytes, mixed scale signs, type-specific sub-scale extremes);
                   every scale is a finite f16, so every value is finite
  values.bin       gguf.quants.dequantize(blocks) as f32 little endian
  quant_input.bin  (q8_0, q4_0, q4_1) a seeded f32 vector with edge blocks (zeros, constants,
  quantized.bin    exact .5 ties, a signed-max tie, tiny values) and gguf.quants.quantize of it
  manifest.json    the walker's format (kind "dequant", op = the type name); args.edge_blocks
                   (and quant_edge_blocks) name the edge-case blocks by index

Deterministic: numpy's PCG64 seeded per type; a re-run gives byte-identical files. oracle.date is
today (UTC) unless SOURCE_DATE_EPOCH is set.

  /work/.oracle-venv/bin/python tools/oracle/quant_goldens.py --out goldens
"""
import argparse
import datetime
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

SEED = 0
N_RANDOM = 48  # random quant bytes, scale magnitudes 2^-8..2^-4, random signs
N_WIDE = 16  # random quant bytes, scale magnitudes 2^-24..2^15 (subnormal to large f16)

# name -> (ggml type, byte offsets of the block's f16 fields, legacy quantizer checked bit-exact)
TYPES = {
    "q8_0": (T.Q8_0, [0], True),
    "q4_0": (T.Q4_0, [0], True),
    "q4_1": (T.Q4_1, [0, 2], True),
    "q4_k": (T.Q4_K, [0, 2], False),
    "q6_k": (T.Q6_K, [208], False),
    "iq4_nl": (T.IQ4_NL, [0], False),
}


def f16_bytes(v):
    return np.array([v], dtype=np.float16).view(np.uint8)


def set_fields(blk, offs, vals):
    for o, v in zip(offs, vals):
        blk[o:o + 2] = f16_bytes(v)


def quant_mask(bb, offs):
    """True on every byte that is not an f16 scale field."""
    m = np.ones(bb, dtype=bool)
    for o in offs:
        m[o:o + 2] = False
    return m


def make_blocks(name, rng):
    qt, offs, _ = TYPES[name]
    _, bb = GGML_QUANT_SIZES[qt]
    mask = quant_mask(bb, offs)
    blocks, labels = [], []

    def rand_block():
        return rng.integers(0, 256, size=bb, dtype=np.uint8)

    def rand_scale(lo, hi):
        return np.float32(rng.choice([-1.0, 1.0]) * 2.0 ** rng.uniform(lo, hi))

    for i in range(N_RANDOM):
        b = rand_block()
        set_fields(b, offs, [rand_scale(-8, -4) for _ in offs])
        blocks.append(b)
        labels.append("random")
    for i in range(N_WIDE):
        b = rand_block()
        set_fields(b, offs, [rand_scale(-24, 15) for _ in offs])
        blocks.append(b)
        labels.append("random wide-range scales")

    def edge(label, scales, fill=None, patch=None):
        b = rand_block()
        if fill is not None:
            b[mask] = fill
        if patch is not None:
            patch(b)
        set_fields(b, offs, scales if len(scales) == len(offs) else scales * len(offs))
        blocks.append(b)
        labels.append(label)

    edge("zero scale", [0.0])
    edge("-0 scale", [-0.0])
    edge("negative scale", [-0.046875])
    edge("all-0x00 quant bytes", [0.03125], fill=0x00)
    edge("all-0xFF quant bytes", [0.03125], fill=0xFF)
    edge("all-0xFF quant bytes, negative scale", [-0.0078125], fill=0xFF)
    edge("all-0x00 quant bytes, negative scale", [-0.0625], fill=0x00)
    edge("smallest subnormal f16 scale", [np.float16(2.0 ** -24)])
    edge("largest subnormal f16 scale", [np.float16(6.097555e-05)])
    edge("largest f16 scale", [65504.0])
    edge("-largest f16 scale, all-0xFF", [-65504.0], fill=0xFF)
    edge("1.0 scale (codes readable)", [1.0])
    if len(offs) == 2:
        edge("positive d, negative min", [0.015625, -0.5])
        edge("negative d, positive min", [-0.015625, 0.5])
        edge("zero d, nonzero min", [0.0, -0.25])
        edge("nonzero d, zero min", [0.0625, 0.0], fill=0xFF)
    if name == "q4_k":
        def scales_to(v):
            return lambda b: b.__setitem__(slice(4, 16), v)
        edge("q4_k 6-bit scales/mins all 63", [0.001, 0.002], patch=scales_to(0xFF))
        edge("q4_k 6-bit scales/mins all 0", [0.001, 0.002], patch=scales_to(0x00))
        edge("q4_k high scale bits only", [0.5, 0.25], patch=lambda b: b.__setitem__(slice(4, 16), [0xC0] * 8 + [0x00] * 4))
        edge("q4_k low scale nibbles only", [0.5, 0.25], patch=lambda b: b.__setitem__(slice(4, 16), [0x00] * 8 + [0xFF] * 4))
    if name == "q6_k":
        edge("q6_k sub-scales all -128", [0.01], patch=lambda b: b.__setitem__(slice(192, 208), 0x80))
        edge("q6_k sub-scales all 127", [-0.01], patch=lambda b: b.__setitem__(slice(192, 208), 0x7F))
        edge("q6_k sub-scales all 0", [0.5], patch=lambda b: b.__setitem__(slice(192, 208), 0x00))
        edge("q6_k ql 0xFF, qh 0x00", [0.125], patch=lambda b: (b.__setitem__(slice(0, 128), 0xFF), b.__setitem__(slice(128, 192), 0x00)))
        edge("q6_k ql 0x00, qh 0xFF", [0.125], patch=lambda b: (b.__setitem__(slice(0, 128), 0x00), b.__setitem__(slice(128, 192), 0xFF)))
    return np.stack(blocks), labels


def make_quant_input(rng, be):
    """f32 blocks for the quantizer check: seeded normals at many scales, then edge blocks."""
    rows, labels = [], []
    for i in range(64):
        rows.append((rng.standard_normal(be) * 10.0 ** rng.uniform(-3, 2)).astype(np.float32))
        labels.append("random")
    z = np.zeros(be, dtype=np.float32)

    def add(label, v):
        rows.append(np.asarray(v, dtype=np.float32))
        labels.append(label)

    add("zeros", z)
    add("constant 1.5", z + 1.5)
    add("constant -2", z - 2.0)
    one = z.copy(); one[7] = -3.25
    add("one nonzero", one)
    tie = z.copy(); tie[3] = -2.0; tie[9] = 2.0; tie[20] = 1.0
    add("signed max tie", tie)
    halves = np.arange(be, dtype=np.float32) - (be // 2) + 0.5
    halves[0] = 127.0
    add("exact .5 steps, max 127", halves)
    steps8 = (np.arange(be, dtype=np.float32) % 15) - 7.5
    steps8[1] = -8.0
    add("exact .5 steps, max -8", steps8)
    q41 = np.arange(be, dtype=np.float32) * 0.5
    q41[-1] = 15.0
    add("exact .5 steps, range 15", q41)
    add("tiny values", (rng.standard_normal(be) * 1e-30).astype(np.float32))
    add("large values", (rng.standard_normal(be) * 3e3).astype(np.float32))
    add("all positive", (np.abs(rng.standard_normal(be)) + 4.0).astype(np.float32))
    add("all negative", (-np.abs(rng.standard_normal(be)) - 4.0).astype(np.float32))
    return np.stack(rows), labels


def edge_labels(labels):
    """{block index: label} for the named (non-random) blocks."""
    return {str(i): l for i, l in enumerate(labels) if not l.startswith("random")}


def sha256(p):
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def today():
    e = os.environ.get("SOURCE_DATE_EPOCH")
    t = datetime.datetime.fromtimestamp(int(e), datetime.timezone.utc) if e else datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%d")


def capture(name, root, script_rel, script_sha, date):
    qt, offs, legacy = TYPES[name]
    be, bb = GGML_QUANT_SIZES[qt]
    seed = [SEED, int(qt)]
    rng = np.random.default_rng(seed)
    blocks, labels = make_blocks(name, rng)
    values = gguf.quants.dequantize(blocks.reshape(-1), qt).astype(np.float32, copy=False)
    assert values.shape == (blocks.shape[0] * be,), values.shape
    assert np.isfinite(values).all(), f"{name}: non-finite dequantized value"
    out = Path(root) / f"quant-{name}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "blocks.bin").write_bytes(blocks.tobytes())
    (out / "values.bin").write_bytes(values.astype("<f4").tobytes())
    n = blocks.shape[0]
    tensors = {
        "blocks": {"file": "blocks.bin", "dtype": name, "shape": [n * be]},
        "values": {"file": "values.bin", "dtype": "f32", "shape": [n * be]},
    }
    args = {"ggml_type": int(qt), "block_elems": be, "block_bytes": bb, "n_blocks": n,
            "n_random": N_RANDOM, "n_wide_range": N_WIDE, "edge_blocks": edge_labels(labels)}
    if legacy:
        x, qlabels = make_quant_input(rng, be)
        q = gguf.quants.quantize(x.reshape(-1), qt)
        assert q.dtype == np.uint8 and q.size == x.shape[0] * bb
        (out / "quant_input.bin").write_bytes(x.astype("<f4").tobytes())
        (out / "quantized.bin").write_bytes(q.tobytes())
        tensors["quant_input"] = {"file": "quant_input.bin", "dtype": "f32", "shape": [x.size]}
        tensors["quantized"] = {"file": "quantized.bin", "dtype": name, "shape": [x.size]}
        args["quant_blocks"] = x.shape[0]
        args["quant_edge_blocks"] = edge_labels(qlabels)
    files = {}
    for t in tensors.values():
        t["sha256"] = files.setdefault(t["file"], sha256(out / t["file"]))
    manifest = {
        "kind": "dequant",
        "op": name,
        "case": f"quant-{name}",
        "args": args,
        "tensors": tensors,
        "files": dict(sorted(files.items())),
        "tolerance": {"values": "bit-exact (f32 bits)", "quantized": "bit-exact (bytes)" if legacy else "n/a"},
        "oracle": {
            "name": "gguf",
            "version": gguf.__version__ if hasattr(gguf, "__version__") else _dist_version("gguf"),
            "torch_version": None,
            "numpy_version": np.__version__,
            "functions": ["gguf.quants.dequantize"] + (["gguf.quants.quantize"] if legacy else []),
            "device": "cpu",
            "dtype": "float32",
            "seed": seed,
            "script": script_rel,
            "script_sha256": script_sha,
            "date": date,
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{out}: {n} blocks, {values.size} values" + (f", {q.size} quantized bytes" if legacy else ""))


def _dist_version(pkg):
    from importlib.metadata import version
    return version(pkg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="goldens", help="goldens root (writes <out>/quant-<type>/)")
    ap.add_argument("--types", nargs="*", default=list(TYPES), choices=list(TYPES))
    a = ap.parse_args()
    here = Path(__file__).resolve()
    repo = here.parents[2]
    script_rel = str(here.relative_to(repo))
    script_sha = sha256(here)
    ver = _dist_version("gguf")
    if ver != "0.19.0":
        sys.exit(f"gguf {ver} installed; the goldens are defined by gguf==0.19.0 (tools/oracle/requirements.txt)")
    date = today()
    for name in a.types:
        capture(name, a.out, script_rel, script_sha, date)


if __name__ == "__main__":
    main()
