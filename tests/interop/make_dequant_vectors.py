#!/usr/bin/env python3
"""Writes the dequantization vectors with gguf-py (pinned in dequant-requirements.txt):
a GGUF file made by GGUFWriter holding tensors of every ggml type that
gguf.quants.dequantize supports, and the values gguf.quants.dequantize gives for them.

Usage: make_dequant_vectors.py OUTDIR
Writes to OUTDIR:
  dequant.gguf        the tensors, in this order for each type T (gguf's order of types):
                      "rand.T"  valid blocks of random bytes, redrawn (seeded) until
                                every value is finite; 2 rows
                      "wild.T"  random bytes as they come: NaN and infinite scales too
                      "quant.T" gguf.quants.quantize of random floats, for the types
                                gguf-py quantizes
                      F16 and BF16 tensors are plain (dense) random bits.
  dequant.json        [{"name", "ggml_type", "type", "shape", "values"}] in tensor order,
                      one tensor a line
  dequant.f32         gguf.quants.dequantize of every tensor, f32 little-endian, in order
  dequant.f16         the same values as f16 (numpy's astype: round to nearest even)
  dequant.bf16        the same values as bf16 (gguf.quants.quantize to BF16: round to
                      nearest even, NaN kept quiet)
The output is the same on every run: tests/interop_dequant.rs regenerates it in a pinned
venv, checks the committed copy in tests/vectors/dequant/ is current, and reads every
tensor through ztensor (f32, f16 and bf16, whole and by rows) comparing bits.
"""

import json
import os
import sys

import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize, quantize

T = GGMLQuantizationType

# Types whose dequantization gguf-py 0.19 implements, in id order (F32 is trivial).
DEQUANTIZED = [T.F16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K,
               T.Q6_K, T.IQ2_XXS, T.IQ2_XS, T.IQ3_XXS, T.IQ1_S, T.IQ4_NL, T.IQ3_S, T.IQ2_S,
               T.IQ4_XS, T.IQ1_M, T.BF16, T.TQ1_0, T.TQ2_0, T.MXFP4, T.NVFP4]
# Types gguf-py also quantizes.
QUANTIZED = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.TQ1_0, T.TQ2_0, T.MXFP4]


def blocks(rng, qtype, count, finite):
    """`count` blocks of random bytes; with `finite`, each block redrawn until its values
    are all finite."""
    _, size = GGML_QUANT_SIZES[qtype]
    out = []
    for _ in range(count):
        while True:
            b = rng.integers(0, 256, size=size, dtype=np.uint8)
            if not finite:
                break
            with np.errstate(all="ignore"):
                if np.isfinite(dequantize(b.reshape(1, size), qtype)).all():
                    break
        out.append(b)
    return np.stack(out)


def plain_bits(rng, qtype, shape, finite):
    """Random f16 or bf16 bits; with `finite`, no NaN or infinity."""
    bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
    if finite:
        # An exponent of all ones is NaN or infinity in both: clear its top bit.
        full = np.uint16(0x7C00) if qtype == T.F16 else np.uint16(0x7F80)
        bits = np.where((bits & full) == full, bits & np.uint16(0xBFFF), bits)
    return bits


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_dequant_vectors.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20250115)
    w = GGUFWriter(os.path.join(out, "dequant.gguf"), "test")
    index, values = [], []

    def add(name, qtype, stored, shape):
        """stored: the bytes (or plain bits) as written; shape: the tensor's row-major shape."""
        w.add_tensor(name, stored, raw_dtype=qtype)
        raw = np.ascontiguousarray(stored)
        with np.errstate(all="ignore"):
            v = dequantize(raw.view(np.uint8), qtype).reshape(-1)
        assert v.dtype == np.float32, (name, v.dtype)
        assert v.size == int(np.prod(shape)), (name, v.size, shape)
        index.append({"name": name, "ggml_type": int(qtype), "type": qtype.name, "shape": list(shape),
                      "values": int(v.size)})
        values.append(v)

    for qtype in DEQUANTIZED:
        lower = qtype.name.lower()
        if qtype in (T.F16, T.BF16):
            for kind, finite in (("rand", True), ("wild", False)):
                bits = plain_bits(rng, qtype, (3, 40), finite)
                add("%s.%s" % (kind, lower), qtype, bits, (3, 40))
            continue
        block, size = GGML_QUANT_SIZES[qtype]
        per_row = 2 if block <= 64 else 1
        for kind, finite in (("rand", True), ("wild", False)):
            b = blocks(rng, qtype, 2 * per_row, finite).reshape(2, per_row * size)
            add("%s.%s" % (kind, lower), qtype, b, (2, per_row * block))
        if qtype in QUANTIZED:
            x = rng.standard_normal((2, per_row * block)).astype(np.float32)
            x[0, :3] = [0.0, -0.0, 3.5]
            q = quantize(x, qtype)
            add("quant.%s" % lower, qtype, q, x.shape)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    allv = np.concatenate(values)
    with open(os.path.join(out, "dequant.f32"), "wb") as fh:
        fh.write(allv.astype("<f4").tobytes())
    with open(os.path.join(out, "dequant.f16"), "wb") as fh:
        with np.errstate(all="ignore"):
            fh.write(allv.astype("<f2").tobytes())
    with open(os.path.join(out, "dequant.bf16"), "wb") as fh:
        fh.write(quantize(allv, T.BF16).tobytes())
    with open(os.path.join(out, "dequant.json"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write("[\n" + ",\n".join(" " + json.dumps(e) for e in index) + "\n]\n")
    print("%d tensors, %d values written to %s" % (len(index), allv.size, out))


if __name__ == "__main__":
    main()
