"""Writes .npy/.npz files with numpy itself and .onnx models with the onnx package, and
what ztensor must read from each (expected.json per directory), for
tests/interop_numpy_onnx.rs.

    python make_numpy_onnx_vectors.py OUT_DIR

OUT_DIR/numpy/ and OUT_DIR/onnx/ receive the files and an expected.json mapping each file
name to {"format", "version", "objects": [...], "attributes"} or {"error": status}. An
object is {"name", "shape", "dtype", "type", "nbytes", "sha256", "attributes"}; sha256 is
of the bytes ztensor must give: row-major, little-endian, whatever order or byte order
the file keeps them in. Pins: tests/interop/numpy-onnx-requirements.txt. The committed
copy is tests/vectors/{numpy,onnx}/; rerun with OUT_DIR=tests/vectors to refresh it.
"""

import hashlib
import json
import os
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]

# numpy kind + itemsize -> (ztensor storage dtype, logical type)
PLAIN = {
    ("b", 1): ("bool", None),
    ("i", 1): ("i8", None), ("i", 2): ("i16", None), ("i", 4): ("i32", None), ("i", 8): ("i64", None),
    ("u", 1): ("u8", None), ("u", 2): ("u16", None), ("u", 4): ("u32", None), ("u", 8): ("u64", None),
    ("f", 2): ("f16", None), ("f", 4): ("f32", None), ("f", 8): ("f64", None),
    ("c", 8): ("f32", "complex64"), ("c", 16): ("f64", "complex128"),
}


def sha(b):
    return hashlib.sha256(b).hexdigest()


def le_bytes(a):
    """Row-major little-endian bytes of an array."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes()


def npy_object(name, a):
    """What ztensor reports for array `a`."""
    dt = a.dtype
    shape = list(a.shape)
    attrs = None
    if (dt.kind, dt.itemsize) in PLAIN:
        dtype, logical = PLAIN[(dt.kind, dt.itemsize)]
    elif dt.kind in "SV":
        dtype, logical = "u8", None
        shape.append(dt.itemsize)
        attrs = {"numpy.descr": dt.str}
    elif dt.kind == "U":
        dtype, logical = "u32", None
        shape.append(dt.itemsize // 4)
        attrs = {"numpy.descr": dt.str}
    elif dt.kind in "Mm":
        dtype, logical = "i64", None
        attrs = {"numpy.descr": dt.str}
    else:
        raise ValueError(dt)
    data = le_bytes(a)
    return {"name": name, "shape": shape, "dtype": dtype, "type": logical,
            "nbytes": len(data), "sha256": sha(data), "attributes": attrs}


def numpy_vectors():
    d = os.path.join(OUT, "numpy")
    os.makedirs(d, exist_ok=True)
    expected = {}
    rng = np.random.default_rng(29)

    def arr(descr, shape=(2, 3)):
        dt = np.dtype(descr)
        n = int(np.prod(shape))
        if dt.kind == "b":
            v = rng.integers(0, 2, n).astype(dt)
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            v = rng.integers(info.min, info.max, n, dtype=np.int64 if dt.kind == "i" else np.uint64,
                             endpoint=True).astype(dt)
        elif dt.kind == "f":
            v = (rng.standard_normal(n) * 100).astype(dt)
        elif dt.kind == "c":
            v = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
        elif dt.kind == "S":
            v = np.array([b"ab", b"xyz", b"", b"hello", b"q", b"zz"][: n] * (n // 6 + 1), dtype=dt)[:n]
        elif dt.kind == "U":
            v = np.array(["ab", "\u00e9\u4e2d", "", "x", "yz", "\U0001f600"] * (n // 6 + 1), dtype=dt)[:n]
        elif dt.kind == "V":
            v = np.frombuffer(rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes(), dtype=dt)
        elif dt.kind in "Mm":
            v = rng.integers(-10**12, 10**12, n).astype(dt)
        return v.reshape(shape)

    def save(fname, a, **kw):
        np.save(os.path.join(d, fname), a, **kw)
        expected[fname] = {"format": "numpy", "version": "1.0", "objects": [npy_object("array", a)],
                           "attributes": None}

    for code in ["b1", "i1", "u1", "S5", "V3"]:
        save(f"npy_{code}.npy", arr("|" + code))
    for code in ["i2", "i4", "i8", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16", "U3",
                 "M8[ns]", "m8[s]"]:
        for order, tag in (("<", "le"), (">", "be")):
            save(f"npy_{code.replace('[', '_').replace(']', '')}_{tag}.npy", arr(order + code))
    save("npy_bfloat16.npy", np.array([1.5, -2, 3.25], dtype=ml_dtypes.bfloat16))
    save("npy_scalar.npy", np.array(7.5, dtype="<f8"))
    save("npy_empty.npy", np.zeros((0, 3), dtype="<f4"))
    save("npy_fortran_f4.npy", np.asfortranarray(arr("<f4", (3, 4))))
    save("npy_fortran_i2_be_3d.npy", np.asfortranarray(arr(">i2", (2, 3, 4))))
    save("npy_fortran_U3.npy", np.asfortranarray(arr("<U3", (2, 3))))
    save("npy_fortran_c8_be.npy", np.asfortranarray(arr(">c8", (3, 2))))
    # Version 2.0 (a header over 64 KiB: many fields in a dtype is the only way numpy
    # writes one; forced here through its own writer).
    a = arr("<f4", (4,))
    with open(os.path.join(d, "npy_v2.npy"), "wb") as f:
        np.lib.format.write_array(f, a, version=(2, 0))
    expected["npy_v2.npy"] = {"format": "numpy", "version": "2.0", "objects": [npy_object("array", a)],
                              "attributes": None}
    # Refused: object arrays (pickles), structured dtypes, long double.
    np.save(os.path.join(d, "npy_object.npy"), np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    expected["npy_object.npy"] = {"error": "ZT_ERR_UNSUPPORTED"}
    np.save(os.path.join(d, "npy_structured.npy"), np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")]))
    expected["npy_structured.npy"] = {"error": "ZT_ERR_UNSUPPORTED"}
    np.save(os.path.join(d, "npy_longdouble.npy"), np.zeros(2, dtype=np.longdouble))
    expected["npy_longdouble.npy"] = {"error": "ZT_ERR_UNSUPPORTED"}

    members = {
        "weights": arr("<f4", (4, 5)),
        "bias": arr(">f8", (5,)),
        "ids": arr("<i8", (3,)),
        "mask": arr("|b1", (2, 2)),
        "fortran": np.asfortranarray(arr("<u2", (3, 2))),
        "names": arr("<U3", (2,)),
        "nested/path": arr("<c8", (2,)),
        "empty": np.zeros((0,), dtype="<f4"),
    }
    for fname, fn in (("npz_stored.npz", np.savez), ("npz_deflated.npz", np.savez_compressed)):
        fn(os.path.join(d, fname), **members)
        expected[fname] = {"format": "numpy", "version": "npz", "attributes": None,
                           "objects": [npy_object(k, v) for k, v in members.items()]}
    np.savez(os.path.join(d, "npz_empty.npz"))
    expected["npz_empty.npz"] = {"format": "numpy", "version": "npz", "attributes": None, "objects": []}
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


# ONNX data types: (onnx type, ztensor dtype, logical, ml_dtypes/numpy dtype, bits)
ONNX_TYPES = [
    (TensorProto.FLOAT, "f32", None, np.float32, 32),
    (TensorProto.UINT8, "u8", None, np.uint8, 8),
    (TensorProto.INT8, "i8", None, np.int8, 8),
    (TensorProto.UINT16, "u16", None, np.uint16, 16),
    (TensorProto.INT16, "i16", None, np.int16, 16),
    (TensorProto.INT32, "i32", None, np.int32, 32),
    (TensorProto.INT64, "i64", None, np.int64, 64),
    (TensorProto.BOOL, "bool", None, np.bool_, 8),
    (TensorProto.FLOAT16, "f16", None, np.float16, 16),
    (TensorProto.DOUBLE, "f64", None, np.float64, 64),
    (TensorProto.UINT32, "u32", None, np.uint32, 32),
    (TensorProto.UINT64, "u64", None, np.uint64, 64),
    (TensorProto.COMPLEX64, "f32", "complex64", np.complex64, 64),
    (TensorProto.COMPLEX128, "f64", "complex128", np.complex128, 128),
    (TensorProto.BFLOAT16, "bf16", None, ml_dtypes.bfloat16, 16),
    (TensorProto.FLOAT8E4M3FN, "u8", "f8_e4m3fn", ml_dtypes.float8_e4m3fn, 8),
    (TensorProto.FLOAT8E4M3FNUZ, "u8", "f8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, 8),
    (TensorProto.FLOAT8E5M2, "u8", "f8_e5m2", ml_dtypes.float8_e5m2, 8),
    (TensorProto.FLOAT8E5M2FNUZ, "u8", "f8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, 8),
    (TensorProto.UINT4, "u8", "uint4_x2", ml_dtypes.uint4, 4),
    (TensorProto.INT4, "u8", "int4_x2", ml_dtypes.int4, 4),
    (TensorProto.FLOAT4E2M1, "u8", "f4_e2m1fn_x2", ml_dtypes.float4_e2m1fn, 4),
    (TensorProto.FLOAT8E8M0, "u8", "f8_e8m0fnu", ml_dtypes.float8_e8m0fnu, 8),
    (TensorProto.UINT2, "u8", "uint2_x4", ml_dtypes.uint2, 2),
    (TensorProto.INT2, "u8", "int2_x4", ml_dtypes.int2, 2),
    (TensorProto.FLOAT6E2M3, "u8", "f6_e2m3fn_x4", ml_dtypes.float6_e2m3fn, 6),
    (TensorProto.FLOAT6E3M2, "u8", "f6_e3m2fn_x4", ml_dtypes.float6_e3m2fn, 6),
]


def onnx_values(np_type, shape, rng):
    n = int(np.prod(shape))
    if np_type in (np.complex64, np.complex128):
        v = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    elif np_type == np.bool_:
        v = rng.integers(0, 2, n)
    elif np.dtype(np_type).kind in "iu" and np.dtype(np_type).itemsize > 0 and np_type in (
            np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.uint32, np.uint64):
        info = np.iinfo(np_type)
        v = rng.integers(max(info.min, -2**40), min(info.max, 2**40), n, endpoint=True)
    elif np_type in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2):
        info = ml_dtypes.iinfo(np_type)
        v = rng.integers(int(info.min), int(info.max), n, endpoint=True)
    elif np_type == ml_dtypes.float8_e8m0fnu:
        v = 2.0 ** rng.integers(-5, 5, n)
    else:
        v = rng.choice([0.0, 0.5, 1.0, -1.5, 2.0, 3.0, -0.25, 1.75], n)
    return np.array(v).astype(np_type).reshape(shape)


def packed(a, bits):
    """The bytes ONNX keeps values of fewer than 8 bits in: low bits first."""
    raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8).astype(np.uint64)
    mask = (1 << bits) - 1
    out = bytearray((len(raw) * bits + 7) // 8)
    for i, v in enumerate(raw):
        v = int(v) & mask
        bit = i * bits
        out[bit // 8] |= (v << (bit % 8)) & 0xFF
        if bit % 8 + bits > 8:
            out[bit // 8 + 1] |= v >> (8 - bit % 8)
    return bytes(out)


def expected_bytes(a, bits):
    if bits < 8:
        return packed(a, bits)
    return le_bytes(a)


def onnx_object(name, a, zt, logical, bits):
    data = expected_bytes(a, bits)
    return {"name": name, "shape": list(a.shape), "dtype": zt, "type": logical,
            "nbytes": len(data), "sha256": sha(data), "attributes": None}


def typed_tensor(name, onnx_type, a, bits):
    """A TensorProto keeping `a` in its typed field (no raw_data)."""
    flat = a.reshape(-1)
    if onnx_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128):
        vals = flat.tolist()
    elif bits < 8 and bits != 6:
        vals = list(packed(a, bits))
        t = helper.make_tensor(name, onnx_type, list(a.shape), [0] * flat.size, raw=False)
        del t.int32_data[:]
        t.int32_data.extend(vals)
        return t
    elif onnx_type in (TensorProto.FLOAT16, TensorProto.BFLOAT16) or bits in (6, 8) and onnx_type not in (
            TensorProto.UINT8, TensorProto.INT8, TensorProto.BOOL):
        # Float types kept as their bits in int32_data.
        t = helper.make_tensor(name, onnx_type, list(a.shape), [0] * flat.size, raw=False)
        del t.int32_data[:]
        t.int32_data.extend(int(x) for x in np.ascontiguousarray(flat).view(
            np.uint16 if bits == 16 else np.uint8))
        return t
    else:
        vals = flat.tolist()
    return helper.make_tensor(name, onnx_type, list(a.shape), vals, raw=False)


def model_of(inits, name, sparse=()):
    graph = helper.make_graph([], name, [], [], initializer=inits, sparse_initializer=list(sparse))
    m = helper.make_model(graph, producer_name="ztensor-interop", producer_version="29",
                          opset_imports=[helper.make_opsetid("", 21)])
    m.doc_string = "vectors for ztensor"
    helper.set_model_props(m, {"author": "ztensor", "license": "MIT"})
    return m


def onnx_vectors():
    d = os.path.join(OUT, "onnx")
    os.makedirs(d, exist_ok=True)
    expected = {}
    rng = np.random.default_rng(290)

    def attrs_of(m, unread=None):
        a = {"onnx.ir_version": m.ir_version, "onnx.producer_name": "ztensor-interop",
             "onnx.producer_version": "29", "onnx.doc_string": "vectors for ztensor",
             "onnx.opset_import": {"": 21}, "author": "ztensor", "license": "MIT"}
        if unread:
            a["onnx.unread_initializers"] = unread
        return a

    for kind in ("raw", "typed"):
        inits, objs = [], []
        for onnx_type, zt, logical, np_type, bits in ONNX_TYPES:
            tname = TensorProto.DataType.Name(onnx_type).lower()
            # Shapes whose values fill whole bytes groups for the sub-byte floats; odd
            # counts for the sub-byte ints, whose last byte is padded.
            shape = (2, 4) if bits in (4, 6) and logical and logical.startswith("f") else (
                (3, 3) if bits < 8 else (2, 3))
            a = onnx_values(np_type, shape, rng)
            if kind == "raw":
                t = numpy_helper.from_array(a, tname)
            else:
                t = typed_tensor(tname, onnx_type, a, bits)
            inits.append(t)
            objs.append(onnx_object(tname, a, zt, logical, bits))
        sparse = []
        unread = None
        if kind == "typed":
            inits.append(helper.make_tensor("strings", TensorProto.STRING, [2], [b"ab", b"c"]))
            values = numpy_helper.from_array(np.array([1.0, 2.0], dtype=np.float32), "sparse")
            indices = numpy_helper.from_array(np.array([0, 3], dtype=np.int64), "sparse_idx")
            sparse = [helper.make_sparse_tensor(values, indices, [4])]
            unread = ["strings (STRING)", "sparse (sparse initializer)"]
            # A scalar and an empty tensor.
            inits.append(helper.make_tensor("scalar", TensorProto.FLOAT, [], [2.5]))
            objs.append(onnx_object("scalar", np.array(2.5, dtype=np.float32), "f32", None, 32))
            inits.append(helper.make_tensor("empty", TensorProto.INT64, [0, 2], []))
            objs.append(onnx_object("empty", np.zeros((0, 2), dtype=np.int64), "i64", None, 64))
        m = model_of(inits, f"g_{kind}", sparse)
        fname = f"model_{kind}.onnx"
        onnx.save_model(m, os.path.join(d, fname))
        expected[fname] = {"format": "onnx", "version": str(m.ir_version), "objects": objs,
                           "attributes": attrs_of(m, unread)}

    # External data: every tensor of the raw model in one file beside the model.
    inits, objs = [], []
    for i, (onnx_type, zt, logical, np_type, bits) in enumerate(ONNX_TYPES[:15]):
        a = onnx_values(np_type, (4, 3), rng)
        name = f"w{i}"
        inits.append(numpy_helper.from_array(a, name))
        objs.append(onnx_object(name, a, zt, logical, bits))
    m = model_of(inits, "g_ext")
    fname = "model_external.onnx"
    onnx.save_model(m, os.path.join(d, fname), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model_external.weights",
                    size_threshold=0)
    expected[fname] = {"format": "onnx", "version": str(m.ir_version), "objects": objs,
                       "attributes": attrs_of(m)}

    # External data that points outside the model's directory, or at an absolute path.
    for fname, location in (("external_traversal.onnx", "../outside.bin"),
                            ("external_absolute.onnx", "/etc/hostname")):
        t = numpy_helper.from_array(np.zeros(4, dtype=np.float32), "w")
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", "0"), ("length", "16")):
            e = t.external_data.add()
            e.key, e.value = k, v
        onnx.save_model(model_of([t], "g_bad"), os.path.join(d, fname))
        expected[fname] = {"error": "ZT_ERR_FORMAT"}
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


numpy_vectors()
onnx_vectors()
