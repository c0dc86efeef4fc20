#!/usr/bin/env python3
"""Writes the safetensors and GGUF interop vectors with the formats' own Python packages
(pinned in formats-requirements.txt), each with an independent expectation (.json) built
from the arrays and metadata handed to the writer, never from reading the file back.

Usage: make_format_vectors.py OUTDIR
Writes OUTDIR/safetensors/*.safetensors and OUTDIR/gguf/*.gguf, each with NAME.json:

  {"format": "safetensors" | "gguf", "version": "...",
   "attributes": {...} or null,            file attributes (safetensors __metadata__, GGUF
                                            key/values in file order)
   "ordered": true | false,                 whether "objects" is in the reader's order
   "objects": [{"name", "format", "shape", "dtype", "type", "attributes", "nbytes",
                "sha256"}]}                 sha256 of the exact bytes of the "data" component
or, for a file the reader must refuse: {"error": "ZT_ERR_..."}.

Non-UTF-8 strings are expected as {"$bytes": "<hex>"} (the reader keeps them as bytes).
The output is the same on every run: tests/interop_formats.rs regenerates the files in a
pinned venv, reads them, and checks that the committed copies in tests/vectors/ are current.

Objects may carry "f32", "f16" and "bf16": the bits of their values read as that dtype
(the sub-byte float types, whose values come from ml_dtypes).

Notes on what the packages can't write:
- safetensors' numpy API writes bf16, fp8 and complex64 through ml_dtypes/numpy dtypes,
  so every dtype below comes from the package itself.
- GGUFWriter writes v3 only; the v2 vector is a v3 file with its version field set to 2
  (v2 and v3 differ only in v3 allowing big-endian files).
- Q8_1 is left out: gguf-py says 40 bytes per block (the old float layout), ggml and this
  library 36; no real file stores Q8_1.
"""

import hashlib
import json
import os
import struct
import sys

import ml_dtypes
import numpy as np
from gguf import GGUFWriter, GGUFValueType, GGMLQuantizationType
from gguf.constants import GGML_QUANT_SIZES
from safetensors.numpy import save_file


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def rng_bytes(seed, n):
    return np.random.default_rng(seed).integers(0, 256, size=n, dtype=np.uint8)


def dump(path, doc):
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(doc, fh, indent=1, sort_keys=False, ensure_ascii=False)
        fh.write("\n")


def obj(name, fmt, shape, dtype, data, typ=None, attributes=None):
    raw = np.ascontiguousarray(data).tobytes()
    return {"name": name, "format": fmt, "shape": [int(d) for d in shape], "dtype": dtype, "type": typ,
            "attributes": attributes, "nbytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


# --------------------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------------------

ST_DTYPES = [
    # numpy dtype, our storage dtype, our logical type
    (np.float64, "f64", None),
    (np.float32, "f32", None),
    (np.float16, "f16", None),
    (ml_dtypes.bfloat16, "bf16", None),
    (np.int64, "i64", None),
    (np.int32, "i32", None),
    (np.int16, "i16", None),
    (np.int8, "i8", None),
    (np.uint64, "u64", None),
    (np.uint32, "u32", None),
    (np.uint16, "u16", None),
    (np.uint8, "u8", None),
    (np.bool_, "bool", None),
    (ml_dtypes.float8_e4m3fn, "u8", "f8_e4m3fn"),
    (ml_dtypes.float8_e5m2, "u8", "f8_e5m2"),
    (ml_dtypes.float8_e4m3fnuz, "u8", "f8_e4m3fnuz"),
    (ml_dtypes.float8_e5m2fnuz, "u8", "f8_e5m2fnuz"),
    (np.complex64, "f32", "complex64"),
]


def st_values(dt, shape, seed):
    n = int(np.prod(shape))
    rng = np.random.default_rng(seed)
    if dt == np.bool_:
        return (rng.integers(0, 2, size=n) == 1).reshape(shape)
    if dt == np.complex64:
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64).reshape(shape)
    if np.issubdtype(np.dtype(dt), np.integer):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True).reshape(shape)
    # floats (incl. ml_dtypes): small values every format represents
    return (rng.standard_normal(n) * 4).astype(np.float32).astype(dt).reshape(shape)


def safetensors_vectors(out):
    d = os.path.join(out, "safetensors")
    os.makedirs(d, exist_ok=True)

    tensors, objects = {}, []
    shapes = [(2, 3), (5,), (2, 2, 2)]
    for i, (dt, storage, typ) in enumerate(ST_DTYPES):
        name = "t.%s" % np.dtype(dt).name
        a = st_values(dt, shapes[i % len(shapes)], i)
        tensors[name] = a
        objects.append(obj(name, "dense", a.shape, storage, a, typ))
    scalar = np.array(3.5, dtype=np.float32)
    tensors["scalar"] = scalar
    objects.append(obj("scalar", "dense", [], "f32", scalar))
    empty = np.zeros((0, 3), dtype=np.float32)
    tensors["empty"] = empty
    objects.append(obj("empty", "dense", [0, 3], "f32", empty))
    meta = {"format": "np", "note": "ünïcödé ✓", "empty": ""}
    save_file(tensors, os.path.join(d, "dtypes.safetensors"), metadata=meta)
    dump(os.path.join(d, "dtypes.json"), {"format": "safetensors", "version": "1", "attributes": meta,
                                          "ordered": False, "objects": objects})

    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.array([1, -2, 3], dtype=np.int16)
    save_file({"w": w, "b": b}, os.path.join(d, "small.safetensors"))
    dump(os.path.join(d, "small.json"), {"format": "safetensors", "version": "1", "attributes": None,
                                         "ordered": False,
                                         "objects": [obj("w", "dense", w.shape, "f32", w),
                                                     obj("b", "dense", b.shape, "i16", b)]})

    subbyte_vector(d)


def pack_bits(codes, width):
    """Codes of `width` bits as one little-endian bit stream (code i in bits
    [width*i, width*i + width) from bit 0 of byte 0), the packing the reader documents."""
    acc, nbits, out = 0, 0, bytearray()
    for c in codes:
        acc |= int(c) << nbits
        nbits += width
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
    assert nbits == 0
    return bytes(out)


def bits_of(values, dt, view):
    return [int(x) for x in np.asarray(values).astype(dt).view(view)]


def subbyte_vector(d):
    """F8_E8M0, F4, F6_E2M3 and F6_E3M2 tensors holding every code of their type, with
    their values as ml_dtypes gives them (f32, f16 and bf16 bits). safetensors' numpy API
    writes F8_E8M0 but none of the packed types, so the file is assembled here; the
    package then reads it back (safe_open checks every size)."""
    from safetensors import safe_open
    kinds = [
        # name, safetensors dtype, our logical type, ml_dtypes type, bits, shape
        ("scales", "F8_E8M0", "f8_e8m0fnu", ml_dtypes.float8_e8m0fnu, 8, [2, 8]),
        ("fp4", "F4", "f4_e2m1fn_x2", ml_dtypes.float4_e2m1fn, 4, [4, 8]),
        ("fp6_e2m3", "F6_E2M3", "f6_e2m3fn_x4", ml_dtypes.float6_e2m3fn, 6, [2, 32]),
        ("fp6_e3m2", "F6_E3M2", "f6_e3m2fn_x4", ml_dtypes.float6_e3m2fn, 6, [64]),
    ]
    header, data, objects = {}, b"", []
    for name, st, typ, mdt, width, shape in kinds:
        n = int(np.prod(shape))
        codes = np.arange(n, dtype=np.uint32) % (1 << width)
        if width == 8:  # the e8m0 codes that matter: the extremes, 1, NaN
            codes = np.array([0, 1, 2, 63, 64, 126, 127, 128, 129, 150, 200, 252, 253, 254, 255, 127],
                             dtype=np.uint32)
        raw = pack_bits(codes, width) if width < 8 else bytes(codes.astype(np.uint8))
        values = codes.astype(np.uint8).view(mdt)
        header[name] = {"dtype": st, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
        o = obj(name, "dense", shape, "u8", np.frombuffer(raw, dtype=np.uint8), typ)
        o["f32"] = bits_of(values, np.float32, np.uint32)
        o["f16"] = bits_of(values, np.float16, np.uint16)
        o["bf16"] = bits_of(values, ml_dtypes.bfloat16, np.uint16)
        objects.append(o)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path = os.path.join(d, "subbyte.safetensors")
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)) + text + data)
    with safe_open(path, framework="np") as f:
        assert sorted(f.keys()) == sorted(header)
    dump(os.path.join(d, "subbyte.json"), {"format": "safetensors", "version": "1", "attributes": None,
                                           "ordered": True, "objects": objects})


# --------------------------------------------------------------------------------------
# GGUF
# --------------------------------------------------------------------------------------

def gguf_metadata(w):
    """Adds one key of every value type; returns the expected attribute pairs (in order,
    after general.architecture which GGUFWriter adds first)."""
    T = GGUFValueType
    f32 = lambda x: float(np.float32(x))  # noqa: E731
    entries = [
        ("test.u8", 200, T.UINT8, None, 200),
        ("test.i8", -100, T.INT8, None, -100),
        ("test.u16", 60000, T.UINT16, None, 60000),
        ("test.i16", -30000, T.INT16, None, -30000),
        ("test.u32", 4000000000, T.UINT32, None, 4000000000),
        ("test.i32", -2000000000, T.INT32, None, -2000000000),
        ("test.u64", 2 ** 64 - 1, T.UINT64, None, 2 ** 64 - 1),
        ("test.i64", -(2 ** 63), T.INT64, None, -(2 ** 63)),
        ("test.f32", 0.1, T.FLOAT32, None, f32(0.1)),
        ("test.f64", 0.1, T.FLOAT64, None, 0.1),
        ("test.bool_true", True, T.BOOL, None, True),
        ("test.bool_false", False, T.BOOL, None, False),
        ("test.string", "héllo wörld", T.STRING, None, "héllo wörld"),
        ("test.string_empty", "", T.STRING, None, ""),
        ("test.string_not_utf8", b"ab\xffcd", T.STRING, None, {"$bytes": "6162ff6364"}),
        ("test.array_i32", [1, -2, 3], T.ARRAY, T.INT32, [1, -2, 3]),
        ("test.array_u8", [0, 255], T.ARRAY, T.UINT8, [0, 255]),
        ("test.array_f32", [0.5, -1.25, 0.1], T.ARRAY, T.FLOAT32, [0.5, -1.25, f32(0.1)]),
        ("test.array_bool", [True, False], T.ARRAY, T.BOOL, [True, False]),
        ("test.array_string", ["a", "", "ü"], T.ARRAY, T.STRING, ["a", "", "ü"]),
        ("test.array_nested", [[1, 2], [3]], T.ARRAY, None, [[1, 2], [3]]),
        ("test.array_nested_strings", [["x"], ["y", "z"]], T.ARRAY, None, [["x"], ["y", "z"]]),
    ]
    for key, val, vtype, sub, _ in entries:
        w.add_key_value(key, val, vtype, sub_type=sub)
    return [(k, e) for k, _, _, _, e in entries]


def write_gguf(path, build, arch="test"):
    w = GGUFWriter(path, arch)
    expected = build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return expected


def gguf_plain(w):
    pairs = [("general.architecture", "test")] + gguf_metadata(w)
    objects = []
    cases = [
        ("f32", np.float32, (2, 3, 4), "f32"),
        ("f16", np.float16, (3, 5), "f16"),
        ("f64", np.float64, (4,), "f64"),
        ("i8", np.int8, (2, 7), "i8"),
        ("i16", np.int16, (3, 2), "i16"),
        ("i32", np.int32, (5,), "i32"),
        ("i64", np.int64, (2, 1, 2), "i64"),
    ]
    for i, (name, dt, shape, ours) in enumerate(cases):
        a = st_values(dt, shape, 100 + i)
        w.add_tensor(name, a)
        objects.append(obj(name, "dense", shape, ours, a))
    bf = st_values(ml_dtypes.bfloat16, (2, 4), 200).view(np.uint16)
    w.add_tensor("bf16", bf, raw_dtype=GGMLQuantizationType.BF16)
    objects.append(obj("bf16", "dense", (2, 4), "bf16", bf))
    empty = np.zeros((0, 4), dtype=np.float32)
    w.add_tensor("empty", empty)
    objects.append(obj("empty", "dense", (0, 4), "f32", empty))
    return pairs, objects


def gguf_quant(w):
    pairs = [("general.architecture", "test"), ("general.quantization_version", 2)]
    w.add_quantization_version(2)
    objects = []
    for i, t in enumerate(sorted(GGML_QUANT_SIZES, key=int)):
        block, size = GGML_QUANT_SIZES[t]
        if block == 1 or t == GGMLQuantizationType.Q8_1:
            continue
        rows = 2 if block <= 64 else 1
        raw = rng_bytes(300 + int(t), rows * size).reshape(rows, size)
        name = "q.%s" % t.name.lower()
        w.add_tensor(name, raw, raw_dtype=t)
        attrs = {"ggml_type": t.name, "ggml_type_id": int(t), "block_size": block, "type_size": size}
        fmt = "ggml_%s" % t.name.lower()
        objects.append(obj(name, fmt, (rows, block), "u8", raw, fmt, attrs))
    return pairs, objects


def gguf_align64(w):
    w.add_custom_alignment(64)
    w.add_string("test.note", "v2, alignment 64")
    pairs = [("general.architecture", "test"), ("general.alignment", 64), ("test.note", "v2, alignment 64")]
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(5, dtype=np.int8)
    w.add_tensor("a", a)
    w.add_tensor("b", b)
    return pairs, [obj("a", "dense", (2, 3), "f32", a), obj("b", "dense", (5,), "i8", b)]


def gguf_vectors(out):
    d = os.path.join(out, "gguf")
    os.makedirs(d, exist_ok=True)
    for name, build, version in [("plain_v3", gguf_plain, 3), ("quant_v3", gguf_quant, 3),
                                 ("align64_v2", gguf_align64, 2)]:
        path = os.path.join(d, name + ".gguf")
        pairs, objects = write_gguf(path, build)
        if version != 3:
            with open(path, "r+b") as fh:
                fh.seek(4)
                fh.write(struct.pack("<I", version))
        dump(os.path.join(d, name + ".json"), {"format": "gguf", "version": str(version),
                                               "attributes": dict(pairs), "ordered": True, "objects": objects})

    path = os.path.join(d, "big_endian.gguf")
    from gguf import GGUFEndian
    w = GGUFWriter(path, "test", endianess=GGUFEndian.BIG)
    w.add_tensor("x", np.arange(4, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    dump(os.path.join(d, "big_endian.json"), {"error": "ZT_ERR_UNSUPPORTED"})


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_format_vectors.py OUTDIR")
    out = sys.argv[1]
    safetensors_vectors(out)
    gguf_vectors(out)
    print("vectors written to %s" % out)


if __name__ == "__main__":
    main()
