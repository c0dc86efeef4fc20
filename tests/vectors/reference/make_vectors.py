#!/usr/bin/env python3
"""Deterministic generator of zTensor interoperability vectors.

    python make_vectors.py --v12 OUTDIR   # needs ztensor==1.2.3 (+ numpy, ml-dtypes, cbor2)
    python make_vectors.py --v01 OUTDIR   # needs ztensor==0.1.4 (+ numpy, ml-dtypes, cbor2)

--v12 writes v12_*.zt with the reference Python writer 1.2.3; --v01 writes
v01_*.zt with the legacy Python writer 0.1.4 plus the v01_handmade_*.zt files
built byte by byte here. Next to every X.zt it writes X.json: what a correct
reader must return for X.zt.

How the expectations are derived (never by reading a file back with a
reference reader):
  * component bytes (data_hex) come from the numpy arrays / fixed values that
    were handed to the writer, as little-endian element bytes;
  * format, shape, attributes, dtype, type, encoding and digest come from the
    manifest, which this script parses itself (cbor2); where the writer was
    given an explicit intent (shape, attributes) the parsed value is checked
    against it, so a lossy writer conversion is caught here;
  * for stored raw components the on-disk bytes are compared with the
    expected bytes, and every digest is recomputed over the stored bytes.

Files written by the two small Rust generators (gen_legacy_rust/ for
v01_rust_*.zt with the crate ztensor 0.1.0, gen_v12_rust/ for
v12_rust_*.zt with the crate ztensor 1.2.3) must be produced into OUTDIR
first; this script then writes their X.json from the RUST_LEGACY / RUST_V12
tables below, which mirror the values hard-coded in the Rust sources.

All values are fixed (no random numbers), so two runs give identical bytes.
"""

import argparse
import hashlib
import importlib.metadata
import json
import os
import struct
import sys

import numpy as np

try:
    import cbor2
except ImportError:  # pragma: no cover
    sys.exit("make_vectors.py needs cbor2 (pip install cbor2==5.6.5)")

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    sys.exit("make_vectors.py needs ml-dtypes (pip install ml-dtypes==0.6.0)")

REF_V12 = "1.2.3"
REF_V01 = "0.1.4"

MAGIC_V12 = b"ZTEN1000"
MAGIC_V01 = b"ZTEN0001"

SHORT_DTYPE = {
    "float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8",
    "uint64": "u64", "uint32": "u32", "uint16": "u16", "uint8": "u8",
    "bool": "bool",
}
LEGACY_KEYS = {"name", "offset", "size", "dtype", "layout", "shape", "encoding",
               "data_endianness", "checksum"}

BF16 = np.dtype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------

def short_dtype(arr):
    """v1.2 spelling of a numpy array's storage dtype."""
    return SHORT_DTYPE[np.dtype(arr.dtype).name]


def le_bytes(arr):
    """Element bytes of `arr` in C order and little-endian byte order."""
    a = np.asarray(arr)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return np.ascontiguousarray(a).tobytes()


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def check_digest(digest, stored, where):
    """Recompute `digest` ("algo:hex") over the stored bytes."""
    if digest is None:
        return
    algo, _, hexpart = digest.partition(":")
    if algo == "sha256":
        ok = hashlib.sha256(stored).hexdigest() == hexpart.lower()
    elif algo == "crc32c":
        ok = int(hexpart, 16) == crc32c(stored)
    else:
        raise SystemExit(f"{where}: unknown digest algorithm in {digest!r}")
    if not ok:
        raise SystemExit(f"{where}: digest {digest} does not match the stored bytes")


def zstd_frame_info(frame):
    """(has_content_size, content_size_or_None, has_checksum) of a zstd frame."""
    if frame[:4] != b"\x28\xb5\x2f\xfd":
        raise SystemExit("component is not a zstd frame")
    fhd = frame[4]
    fcs_flag = fhd >> 6
    single_segment = (fhd >> 5) & 1
    checksum_flag = (fhd >> 2) & 1
    dict_flag = fhd & 3
    pos = 5 + (0 if single_segment else 1) + [0, 1, 2, 4][dict_flag]
    fcs_len = [1 if single_segment else 0, 2, 4, 8][fcs_flag]
    if fcs_len == 0:
        return False, None, bool(checksum_flag)
    raw = frame[pos:pos + fcs_len]
    size = int.from_bytes(raw, "little") + (256 if fcs_len == 2 else 0)
    return True, size, bool(checksum_flag)


def attr_json(value):
    """CBOR attribute value (as decoded by cbor2, or as given) -> plain JSON."""
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, dict):
        return {str(k): attr_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [attr_json(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise SystemExit("non-finite attribute floats have no JSON form")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise SystemExit(f"attribute value of unsupported type {type(value).__name__}")


def write_json(path, doc):
    """Pretty at the top level, one compact line per object (diff-friendly)."""
    def dump(v):
        return json.dumps(v, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    lines = ["{", f' "version": {dump(doc["version"])},',
             f' "attributes": {dump(doc["attributes"])},', ' "objects": [']
    objs = [f"  {dump(o)}" for o in doc["objects"]]
    if objs:
        lines.append(",\n".join(objs))
    lines += [" ]", "}"]
    text = "\n".join(lines) + "\n"
    if json.loads(text) != doc:
        raise SystemExit("internal error: JSON round trip")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def component_json(role, dtype, type_, encoding, digest, data):
    return {"role": role, "dtype": dtype, "type": type_, "encoding": encoding,
            "digest": digest, "data_hex": bytes(data).hex()}


def finish_doc(version, attributes, objects):
    objects = sorted(objects, key=lambda o: o["name"])
    for o in objects:
        o["components"].sort(key=lambda c: c["role"])
    return {"version": version, "attributes": attributes, "objects": objects}


# ---------------------------------------------------------------------------
# v1.2 files: manifest parsing and expectations
# ---------------------------------------------------------------------------

def read_v12(path):
    blob = open(path, "rb").read()
    if blob[:8] != MAGIC_V12 or blob[-8:] != MAGIC_V12:
        raise SystemExit(f"{path}: not a v1.2 file")
    (size,) = struct.unpack("<Q", blob[-16:-8])
    manifest = cbor2.loads(blob[len(blob) - 16 - size:len(blob) - 16])
    return blob, manifest


def v12_expectation(path, intents, file_attrs=None):
    """Build X.json for a v1.2 file.

    intents: {object name: {"components": {role: ndarray}, "shape": [...] or None,
              "attributes": dict or None}} -- what was handed to the writer.
    """
    blob, man = read_v12(path)
    if man.get("version") != "1.2.0":
        raise SystemExit(f"{path}: unexpected version {man.get('version')!r}")
    m_objects = man["objects"]
    if sorted(m_objects) != sorted(intents):
        raise SystemExit(f"{path}: objects {sorted(m_objects)} != {sorted(intents)}")
    m_file_attrs = man.get("attributes")
    if attr_json(m_file_attrs or {}) != attr_json(file_attrs or {}):
        raise SystemExit(f"{path}: file attributes differ from what was written")
    objects = []
    for name, intent in intents.items():
        mo = m_objects[name]
        if intent.get("shape") is not None and list(mo["shape"]) != list(intent["shape"]):
            raise SystemExit(f"{path}:{name}: shape {mo['shape']} != {intent['shape']}")
        m_attrs = mo.get("attributes")
        if attr_json(m_attrs or {}) != attr_json(intent.get("attributes") or {}):
            raise SystemExit(f"{path}:{name}: attributes {m_attrs} != {intent.get('attributes')}")
        comps = []
        if sorted(mo["components"]) != sorted(intent["components"]):
            raise SystemExit(f"{path}:{name}: component roles differ")
        for role, arr in intent["components"].items():
            mc = mo["components"][role]
            data = le_bytes(arr)
            encoding = mc.get("encoding", "raw")
            off, length = mc["offset"], mc["length"]
            if off % 64 or off + length > len(blob):
                raise SystemExit(f"{path}:{name}/{role}: bad offset/length")
            stored = blob[off:off + length]
            where = f"{path}:{name}/{role}"
            check_digest(mc.get("digest"), stored, where)
            if encoding == "raw":
                if stored != data:
                    raise SystemExit(f"{where}: stored bytes differ from the array written")
            elif encoding == "zstd":
                if mc.get("uncompressed_length") != len(data):
                    raise SystemExit(f"{where}: uncompressed_length != {len(data)}")
                ZSTD_NOTES.add((os.path.basename(path), f"{name}/{role}", len(data))
                               + zstd_frame_info(stored))
            else:
                raise SystemExit(f"{where}: unknown encoding {encoding}")
            if mc["dtype"] != short_dtype(arr):
                raise SystemExit(f"{where}: dtype {mc['dtype']} != {short_dtype(arr)}")
            comps.append(component_json(role, mc["dtype"], mc.get("type"), encoding,
                                        mc.get("digest"), data))
        objects.append({"name": name, "format": mo["format"], "shape": list(mo["shape"]),
                        "attributes": attr_json(m_attrs or {}), "components": comps})
    return finish_doc("1.2.0", attr_json(m_file_attrs or {}), objects)


ZSTD_NOTES = set()


# ---------------------------------------------------------------------------
# fixed values
# ---------------------------------------------------------------------------

def dtype_values():
    """One small array per storage dtype, with edge values."""
    inf, nan = np.inf, np.nan
    return {
        "f64": np.array([0.0, -0.0, 1.5, -2.25, 1e300, 5e-324, inf, -inf, nan],
                        np.float64).reshape(3, 3),
        "f32": np.array([0.0, -0.0, 1.5, -2.25, 3.4028235e38, 1e-45, inf, -inf, nan, 0.1],
                        np.float32).reshape(2, 5),
        "f16": np.array([0.0, -0.0, 1.0, -2.0, 65504.0, 2.0 ** -24, inf, -inf, nan, 0.1],
                        np.float16),
        "bf16": np.array([0.0, -0.0, 1.0, -2.0, 3.3895314e38, inf, -inf, nan],
                         np.float32).astype(BF16).reshape(2, 4),
        "i64": np.array([-2 ** 63, -1, 0, 1, 2 ** 63 - 1, 0x0102030405060708], np.int64),
        "i32": np.array([-2 ** 31, -1, 0, 1, 2 ** 31 - 1, 0x01020304], np.int32).reshape(2, 3),
        "i16": np.array([-2 ** 15, -1, 0, 1, 2 ** 15 - 1, 0x0102], np.int16),
        "i8": np.array([-128, -1, 0, 1, 127, 0x12], np.int8),
        "u64": np.array([0, 1, 2 ** 64 - 1, 0x0102030405060708, 2 ** 63], np.uint64),
        "u32": np.array([0, 1, 2 ** 32 - 1, 0x01020304, 2 ** 31], np.uint32),
        "u16": np.array([0, 1, 2 ** 16 - 1, 0x0102, 2 ** 15], np.uint16),
        "u8": np.arange(0, 256, 17, dtype=np.uint8).reshape(2, 2, 4)[:, :, :3].copy(),
        "bool": np.array([True, False, True, True, False, False], np.bool_).reshape(2, 3),
    }


FP8 = {
    "f8_e4m3fn": (ml_dtypes.float8_e4m3fn,
                  [0.0, -0.0, 0.5, -1.0, 1.5, 448.0, -448.0, np.nan, 2.0 ** -9]),
    "f8_e5m2": (ml_dtypes.float8_e5m2,
                [0.0, 1.0, -2.0, 57344.0, np.inf, -np.inf, np.nan, 2.0 ** -16]),
    "f8_e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, [0.0, 1.0, -2.0, 240.0, np.nan, 2.0 ** -10]),
    "f8_e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, [0.0, 1.0, -2.0, 57344.0, np.nan, 2.0 ** -17]),
}


def fp8_bytes(type_name):
    t, vals = FP8[type_name]
    return np.array(vals, np.float32).astype(t).view(np.uint8)


def compressible_f32():
    return ((np.arange(256, dtype=np.int64) % 7) * 0.5).astype(np.float32).reshape(16, 16)


RICH_ATTRS = {
    "int": 42,
    "neg": -7,
    "i64_max": 2 ** 63 - 1,
    "i64_min": -2 ** 63,
    "half": 0.5,                 # exact in f16: stored as a CBOR half float
    "f32_exact": 100000.0,       # exact in f32, not in f16 (> 65504)
    "f64": 1.1,                  # needs a CBOR double
    "flag_t": True,
    "flag_f": False,
    "none": None,
    "text": "hello",
    "unicode": "ünïcødé ✓",
    "empty_text": "",
    "list": [1, "two", 3.5, None, [True]],
    "empty_list": [],
    "map": {"b": 1, "a": {"nested": [1, 2]}},
    "empty_map": {},
    "bytes": b"\x00\x01\xfe\xff",
}


# ---------------------------------------------------------------------------
# v1.2 vectors (reference Python writer ztensor 1.2.3)
# ---------------------------------------------------------------------------

class V12:
    """Collects writes for one file, performs them, then writes X.json."""

    def __init__(self, outdir, stem):
        self.path = os.path.join(outdir, stem + ".zt")
        self.ops = []
        self.intents = {}

    def numpy(self, name, arr, compress=None, checksum="none", shape=None):
        """Writer.write_numpy; `shape` overrides the expected manifest shape."""
        arr = np.asarray(arr)
        self.ops.append(("numpy", name, arr, compress, checksum))
        exp_shape = list(arr.shape) if shape is None else shape
        self.intents[name] = {"components": {"data": arr}, "shape": exp_shape,
                              "attributes": None}

    def obj(self, name, components, *, shape=None, format="dense", type=None,
            attributes=None, compress=None, checksum="none"):
        """Writer.write(ztensor.Tensor(...))."""
        self.ops.append(("obj", name, dict(components), shape, format, type, attributes,
                         compress, checksum))
        if shape is None:
            shape = list(components["data"].shape)
        self.intents[name] = {"components": dict(components), "shape": list(shape),
                              "attributes": attributes}

    def write(self):
        import ztensor
        w = ztensor.Writer(self.path)
        for op in self.ops:
            if op[0] == "numpy":
                _, name, arr, compress, checksum = op
                w.write_numpy(name, arr, compress=compress, checksum=checksum)
            else:
                _, name, comps, shape, fmt, type_, attrs, compress, checksum = op
                t = ztensor.Tensor(comps, shape=shape, format=fmt, type=type_,
                                   attributes=attrs)
                w.write(name, t, compress=compress, checksum=checksum)
        w.finish()
        return self.done()

    def done(self, file_attrs=None):
        doc = v12_expectation(self.path, self.intents, file_attrs)
        write_json(self.path[:-3] + ".json", doc)
        return self.path


def gen_v12(outdir):
    import ztensor
    written = []

    def new(stem):
        return V12(outdir, stem)

    # empty file
    written.append(new("v12_empty").write())

    # one file per storage dtype
    for dt, arr in dtype_values().items():
        f = new(f"v12_dtype_{dt}")
        f.numpy("x", arr)
        written.append(f.write())

    # fp8 logical types: dtype u8 + type
    for type_name in FP8:
        f = new(f"v12_type_{type_name}")
        data = fp8_bytes(type_name)
        f.obj("x", {"data": data}, type=type_name)
        written.append(f.write())

    # complex logical types: dtype f32/f64 + type, interleaved real/imag
    c64 = np.array([1 + 2j, -0.5 + 0.25j, 3 - 4j, 1j], np.complex64).reshape(2, 2)
    f = new("v12_type_complex64")
    f.obj("z", {"data": c64.view(np.float32)}, shape=[2, 2], type="complex64")
    written.append(f.write())
    c128 = np.array([1e-300 + 1j, -2.5 - 0j, np.inf + 0.5j], np.complex128)
    f = new("v12_type_complex128")
    f.obj("z", {"data": c128.view(np.float64)}, shape=[3], type="complex128")
    written.append(f.write())

    # an unknown (open-ended) logical type on u8 storage
    f = new("v12_type_unknown")
    f.obj("x", {"data": np.arange(6, dtype=np.uint8)}, type="x_custom_logical")
    written.append(f.write())

    # zstd at several levels (compress=True is level 3)
    for stem, level in (("v12_zstd_default", True), ("v12_zstd_level1", 1),
                        ("v12_zstd_level22", 22)):
        f = new(stem)
        f.numpy("w", compressible_f32(), compress=level)
        f.numpy("ids", np.arange(64, dtype=np.int64), compress=level)
        written.append(f.write())

    # digests over raw and over zstd-compressed bytes
    f = new("v12_digest_crc32c")
    f.numpy("x", np.arange(-6, 6, dtype=np.int32).reshape(3, 4), checksum="crc32c")
    written.append(f.write())
    f = new("v12_digest_sha256")
    f.numpy("x", (np.arange(10, dtype=np.float32) * 0.75), checksum="sha256")
    written.append(f.write())
    f = new("v12_zstd_crc32c")
    f.numpy("x", compressible_f32(), compress=True, checksum="crc32c")
    written.append(f.write())
    f = new("v12_zstd_sha256")
    f.numpy("x", np.tile(np.arange(8, dtype=np.uint16), 16), compress=True, checksum="sha256")
    written.append(f.write())

    # object attributes of every kind the Python API can convert
    f = new("v12_object_attributes")
    f.obj("w", {"data": np.array([1.0, 2.0, 3.0], np.float32)}, attributes=RICH_ATTRS)
    f.obj("e", {"data": np.array([7], np.int8)}, attributes={})
    written.append(f.write())

    # sparse
    csr_vals = np.array([10.0, 20.0, 30.0, 40.0], np.float32)
    csr_idx = np.array([1, 4, 0, 2], np.uint64)
    csr_ptr = np.array([0, 2, 2, 4], np.uint64)     # row 1 is empty
    f = new("v12_sparse_csr")
    f.obj("m", {"values": csr_vals, "indices": csr_idx, "indptr": csr_ptr},
          shape=[3, 5], format="sparse_csr")
    written.append(f.write())
    f = new("v12_sparse_csr_u32")   # not spec-conformant (indices must be u64)
    f.obj("m", {"values": csr_vals, "indices": csr_idx.astype(np.uint32),
                "indptr": csr_ptr.astype(np.uint32)}, shape=[3, 5], format="sparse_csr")
    written.append(f.write())
    coo_vals = np.array([1.5, -2.0, 4.25], np.float64)
    coo_coords = np.array([0, 1, 3,      # dim 0
                           2, 0, 1],     # dim 1
                          np.uint64)
    f = new("v12_sparse_coo")
    f.obj("m", {"values": coo_vals, "coords": coo_coords}, shape=[4, 3], format="sparse_coo")
    written.append(f.write())
    f = new("v12_sparse_coo_3d_zstd_sha256")
    f.obj("t", {"values": np.array([5, -6], np.int16),
                "coords": np.array([0, 1, 2, 0, 1, 3], np.uint64)},
          shape=[2, 3, 4], format="sparse_coo", compress=True, checksum="sha256")
    written.append(f.write())

    # quantized_group (spec example roles and attributes)
    f = new("v12_quantized_group")
    f.obj("q", {"packed_weight": (np.arange(8, dtype=np.int64) * 0x11111111 - 0x40000000)
                .astype(np.int32),
                "scales": (np.arange(8, dtype=np.float32) * 0.125 + 0.5).astype(np.float16),
                "zeros": np.full(8, 8.0, np.float16)},
          shape=[4, 16], format="quantized_group",
          attributes={"bits": 4, "group_size": 8, "packing": "8_per_i32"})
    written.append(f.write())

    # a format string the spec does not define
    f = new("v12_custom_format")
    f.obj("c", {"payload": np.arange(5, dtype=np.uint16) * 1000,
                "lut": np.array([0.0, 0.5, 1.0], np.float32)},
          shape=[5], format="x_lookup_table", attributes={"note": "custom"})
    written.append(f.write())

    # rank 0: write_numpy records a 0-d array as [1]; Tensor keeps []
    f = new("v12_scalar_numpy")
    f.numpy("s", np.array(2.5, np.float32), shape=[1])
    written.append(f.write())
    f = new("v12_scalar_object")
    f.obj("s", {"data": np.array(2.5, np.float32)}, shape=[])
    f.obj("b", {"data": np.array(True)}, shape=[])
    written.append(f.write())

    # zero-size components (zero-length blobs share the next blob's offset)
    f = new("v12_zero_size")
    f.numpy("empty", np.zeros((0, 3), np.float32))
    f.numpy("after", np.array([1.0, 2.0], np.float32))
    f.numpy("empty_u8", np.zeros((2, 0), np.uint8))
    written.append(f.write())
    f = new("v12_zero_size_zstd")
    f.numpy("empty", np.zeros((0,), np.float64), compress=True, checksum="crc32c")
    f.numpy("after", np.array([3, 4], np.int16))
    written.append(f.write())

    # object names
    f = new("v12_names")
    for i, name in enumerate(["layer.0.weight", "model/encoder/ß", "日本語", "a b",
                              "0", "x" * 200]):
        f.numpy(name, np.array([i], np.int32))
    written.append(f.write())

    # Writer.append onto an existing file
    f = new("v12_appended")
    f.numpy("first", np.arange(5, dtype=np.int32))
    f.write()
    g = V12(outdir, "v12_appended")
    g.intents = dict(f.intents)
    w = ztensor.Writer.append(g.path)
    second = np.array([0.5, -0.5, 2.0], np.float32)
    w.write_numpy("second", second, checksum="sha256")
    w.finish()
    g.intents["second"] = {"components": {"data": second}, "shape": [3], "attributes": None}
    written.append(g.done())

    # replace_tensor (in place, digest recomputed)
    f = new("v12_replaced")
    f.numpy("a", np.arange(5, dtype=np.int32), checksum="crc32c")
    f.numpy("b", np.arange(4, dtype=np.float32), compress=True)
    f.write()
    replacement = np.arange(5, dtype=np.int32) * -10
    ztensor.replace_tensor(f.path, "a", replacement)
    f.intents["a"]["components"]["data"] = replacement
    written.append(f.done())

    # remove_tensors (rewrites into a new file)
    tmp = os.path.join(outdir, ".v12_removed_src.zt")
    f = V12(outdir, ".v12_removed_src")
    f.numpy("keep", np.array([1, 2, 3], np.uint8))
    f.numpy("drop", np.array([4.0], np.float64))
    f.numpy("keep2", np.array([5, 6], np.int64), compress=True, checksum="sha256")
    w = ztensor.Writer(tmp)
    for _, name, arr, compress, checksum in f.ops:
        w.write_numpy(name, arr, compress=compress, checksum=checksum)
    w.finish()
    g = V12(outdir, "v12_removed")
    ztensor.remove_tensors(tmp, g.path, ["drop"])
    os.remove(tmp)
    g.intents = {k: v for k, v in f.intents.items() if k != "drop"}
    written.append(g.done())

    # many objects, formats, encodings, digests and attributes in one file
    f = new("v12_mixed")
    f.obj("layer.0.weight", {"data": (np.arange(12, dtype=np.float32) - 6) / 4},
          shape=[3, 4], attributes={"role": "weight", "init": "range", "scale": 0.25})
    f.numpy("layer.0.bias", np.array([0.5, -0.5, 0.0], np.float32), checksum="crc32c")
    f.numpy("embed", (np.arange(24, dtype=np.float32) / 8).astype(BF16).reshape(4, 6),
            compress=True, checksum="crc32c")
    f.numpy("step", np.array([1234567890123], np.int64), checksum="sha256")
    f.obj("fp8", {"data": fp8_bytes("f8_e4m3fn")}, type="f8_e4m3fn",
          attributes={"scale": 2.0})
    # (no complex object here: the reference Python reader cannot read one,
    # which would make the whole file useless for check_with_reference.py)
    f.obj("adj", {"values": np.array([1, 1, 1], np.uint8),
                  "indices": np.array([1, 2, 0], np.uint64),
                  "indptr": np.array([0, 1, 2, 3], np.uint64)},
          shape=[3, 3], format="sparse_csr", attributes={"graph": "cycle"},
          compress=3, checksum="crc32c")
    f.obj("pts", {"values": np.array([0.25, 0.75], np.float16),
                  "coords": np.array([0, 9, 4, 5], np.uint64)},
          shape=[10, 10], format="sparse_coo")
    f.obj("q4", {"packed_weight": np.array([0x76543210, -0x1], np.int32),
                 "scales": np.array([0.5, 0.25], np.float16),
                 "zeros": np.array([8.0, 7.0], np.float16)},
          shape=[2, 8], format="quantized_group",
          attributes={"bits": 4, "group_size": 8, "packing": "8_per_i32"}, checksum="sha256")
    f.numpy("mask", (np.arange(10) % 3 == 0), compress=1)
    f.numpy("big", (np.arange(300, dtype=np.int64) % 5).astype(np.uint8), compress=19)
    f.numpy("nothing", np.zeros((3, 0, 2), np.int16))
    f.obj("scalar", {"data": np.array(-1.0, np.float64)}, shape=[],
          attributes={"unit": "K"})
    f.numpy("u", np.array([2 ** 64 - 1, 0], np.uint64))
    written.append(f.write())

    # files written by gen_v12_rust (Rust crate ztensor 1.2.3)
    for stem, (file_attrs, objs) in RUST_V12.items():
        path = os.path.join(outdir, stem + ".zt")
        if not os.path.exists(path):
            print(f"warning: {path} missing: run gen_v12_rust first", file=sys.stderr)
            continue
        g = V12(outdir, stem)
        g.intents = {n: {"components": {"data": a}, "shape": list(a.shape),
                         "attributes": None} for n, a in objs.items()}
        written.append(g.done(file_attrs))

    return written


RUST_V12 = {
    "v12_rust_file_attributes": (
        {"framework": "zt-vectors", "license": "MIT", "epoch": 3, "neg": -12,
         "u64max": 2 ** 64 - 1, "half": 0.5, "beta": 0.9, "flag": False, "none": None,
         "tags": ["x", "y", 1], "nested": {"depth": {"k": 1}},
         "raw": b"\x00\x01\x02\xff", "名前": "ü ß"},
        {"a": np.array([1.0, -2.0, 0.25, 8.0], np.float32).reshape(2, 2)},
    ),
    "v12_rust_file_attributes_empty": ({}, {}),
}


# ---------------------------------------------------------------------------
# legacy v0.1 files
# ---------------------------------------------------------------------------

def read_v01(path):
    blob = open(path, "rb").read()
    if blob[:8] != MAGIC_V01:
        raise SystemExit(f"{path}: not a v0.1 file")
    (size,) = struct.unpack("<Q", blob[-8:])
    tensors = cbor2.loads(blob[len(blob) - 8 - size:len(blob) - 8])
    return blob, tensors


def legacy_dense(arr):
    return {"format": "dense", "components": {"data": np.asarray(arr)}}


def legacy_coo(values, coords_soa):
    return {"format": "sparse_coo",
            "components": {"values": np.asarray(values),
                           "coords": np.asarray(coords_soa, np.uint64)}}


def legacy_csr(values, indices, indptr):
    return {"format": "sparse_csr",
            "components": {"values": np.asarray(values),
                           "indices": np.asarray(indices, np.uint64),
                           "indptr": np.asarray(indptr, np.uint64)}}


def legacy_blob(intent, ndim):
    """Bytes a v0.1 writer stores (little-endian) for an intended object."""
    c = intent["components"]
    if intent["format"] == "dense":
        return le_bytes(c["data"])
    if intent["format"] == "sparse_coo":
        vals, coords = c["values"], c["coords"].reshape(ndim, -1)
        out = b""
        for k in range(len(vals)):
            out += le_bytes(coords[:, k].astype(np.uint64)) + le_bytes(vals[k:k + 1])
        return out
    return le_bytes(c["indptr"]) + le_bytes(c["indices"]) + le_bytes(c["values"])


def v01_expectation(path, intents):
    """X.json for a legacy file. intents: {name: {format, components, [shape], [attributes]}}"""
    blob, tensors = read_v01(path)
    names = [t["name"] for t in tensors]
    if sorted(names) != sorted(intents) or len(set(names)) != len(names):
        raise SystemExit(f"{path}: tensors {names} != {sorted(intents)}")
    objects = []
    for t in tensors:
        name = t["name"]
        intent = intents[name]
        where = f"{path}:{name}"
        layout = t.get("layout", "dense")
        fmt = {"dense": "dense", "sparsecoo": "sparse_coo", "sparsecsr": "sparse_csr"}[layout]
        if fmt != intent["format"]:
            raise SystemExit(f"{where}: layout {layout} != {intent['format']}")
        if "shape" in intent and list(t["shape"]) != list(intent["shape"]):
            raise SystemExit(f"{where}: shape {t['shape']} != {intent['shape']}")
        custom = {k: v for k, v in t.items() if k not in LEGACY_KEYS}
        if attr_json(custom) != attr_json(intent.get("attributes", {})):
            raise SystemExit(f"{where}: custom fields {custom} differ")
        dtype = SHORT_DTYPE[t["dtype"]]
        main_role = "data" if fmt == "dense" else "values"
        if short_dtype(intent["components"][main_role]) != dtype:
            raise SystemExit(f"{where}: dtype {dtype} differs")
        stored = blob[t["offset"]:t["offset"] + t["size"]]
        if t["offset"] % 64 or len(stored) != t["size"]:
            raise SystemExit(f"{where}: bad offset/size")
        check_digest(t.get("checksum"), stored, where)
        expected_blob = legacy_blob(intent, len(t["shape"]))
        if t["encoding"] == "raw":
            on_disk = stored
            if t.get("data_endianness") == "big":
                width = np.dtype(intent["components"][main_role].dtype).itemsize
                on_disk = b"".join(stored[i:i + width][::-1]
                                   for i in range(0, len(stored), width))
            if on_disk != expected_blob:
                raise SystemExit(f"{where}: stored bytes differ from the values written")
        elif t["encoding"] == "zstd":
            ZSTD_NOTES.add((os.path.basename(path), name, len(expected_blob))
                           + zstd_frame_info(stored))
        comps = []
        for role, arr in intent["components"].items():
            comps.append(component_json(
                role, short_dtype(arr), None, t["encoding"] if fmt == "dense" else "raw",
                t.get("checksum") if fmt == "dense" else None, le_bytes(arr)))
        objects.append({"name": name, "format": fmt, "shape": list(t["shape"]),
                        "attributes": attr_json(custom), "components": comps})
    return finish_doc("0.1.0", {}, objects)


def gen_v01(outdir):
    import ztensor
    written = []

    def write(stem, tensors):
        """tensors: list of (name, ndarray, expected shape or None)."""
        path = os.path.join(outdir, stem + ".zt")
        with ztensor.Writer(path) as w:
            for name, arr, _ in tensors:
                w.add_tensor(name, arr)
        intents = {}
        for name, arr, shape in tensors:
            intents[name] = legacy_dense(arr)
            intents[name]["shape"] = list(arr.shape) if shape is None else shape
        write_json(path[:-3] + ".json", v01_expectation(path, intents))
        written.append(path)

    write("v01_empty", [])
    for dt, arr in dtype_values().items():
        write(f"v01_dtype_{dt}", [("x", arr, None)])
    write("v01_scalar", [("s", np.array(-3.25, np.float64), [1])])
    write("v01_zero_size", [("empty", np.zeros((0, 4), np.float32), None),
                            ("after", np.array([1, 2, 3], np.int16), None),
                            ("empty_bool", np.zeros((0,), np.bool_), None)])
    write("v01_multi", [
        ("zeta", np.arange(6, dtype=np.float32).reshape(1, 2, 3), None),
        ("alpha", np.array([True, False]), None),
        ("mid.dle/name", np.arange(70, dtype=np.uint8), None),
        ("beta", (np.arange(5, dtype=np.float32) - 2).astype(BF16), None),
        ("ß", np.array([-1], np.int64), None),
    ])

    # hand-made files (see README): sparse blobs of arbitrary size, sha256 checksum
    written += gen_v01_handmade(outdir)

    # files written by gen_legacy_rust (Rust crate ztensor 0.1.0)
    for stem, intents in RUST_LEGACY.items():
        path = os.path.join(outdir, stem + ".zt")
        if not os.path.exists(path):
            print(f"warning: {path} missing: run gen_legacy_rust first", file=sys.stderr)
            continue
        write_json(path[:-3] + ".json", v01_expectation(path, intents))
        written.append(path)
    return written


def _dense(arr, shape=None, attributes=None):
    d = legacy_dense(arr)
    d["shape"] = list(np.asarray(arr).shape) if shape is None else shape
    if attributes is not None:
        d["attributes"] = attributes
    return d


def _u16(bits):
    return np.array(bits, np.uint16)


RUST_LEGACY = {
    "v01_rust_zstd": {
        "w": _dense((np.arange(32, dtype=np.float32) * 0.25 - 4).reshape(4, 8)),
        "b": _dense((np.arange(40) * 7 % 256).astype(np.uint8)),
        "empty": _dense(np.zeros((0,), np.float32)),
    },
    "v01_rust_crc32c": {
        "x": _dense((np.arange(12, dtype=np.int32) * 1000 - 5000).reshape(3, 4)),
    },
    "v01_rust_zstd_crc32c": {
        "y": _dense(np.arange(10, dtype=np.float64) * 1.5),
    },
    "v01_rust_bigendian": {
        "be_f64": _dense(np.array([1.5, -2.25, 1e300], np.float64)),
        "be_f32": _dense(np.array([1.0, -0.5, 3.25, 65504.0], np.float32).reshape(2, 2)),
        "be_f16": _dense(_u16([0x3C00, 0xC000, 0x7BFF]).view(np.float16)),
        "be_bf16": _dense(_u16([0x3F80, 0xC000, 0x7F7F]).view(BF16)),
        "be_i64": _dense(np.array([-2, 0x0102030405060708], np.int64)),
        "be_i32": _dense(np.array([-1, 0x01020304, 7], np.int32)),
        "be_i16": _dense(np.array([-2, 0x0102, 300], np.int16)),
        "be_u64": _dense(np.array([0x0102030405060708, 2 ** 64 - 1], np.uint64)),
        "be_u32": _dense(np.array([0xDEADBEEF, 1], np.uint32)),
        "be_u16": _dense(np.array([0xABCD, 2], np.uint16)),
        "be_u8": _dense(np.array([1, 2, 255], np.uint8)),
        "be_i8": _dense(np.array([-128, 127], np.int8)),
        "be_bool": _dense(np.array([True, False])),
    },
    "v01_rust_custom_fields": {
        "t": _dense(np.array([1.0, 2.0], np.float32), attributes={
            "author": "zt-vectors", "count": 42, "neg": -7, "ratio": 0.5, "pi": 3.14159,
            "flag": True, "nothing": None, "list": [1, "two", 3.0],
            "nested": {"k": "v", "n": 1}, "blob": b"\xde\xad\xbe\xef"}),
        "u": _dense(np.array([9], np.uint8), attributes={"role": "second"}),
    },
    "v01_rust_scalar": {
        "s": _dense(np.array(3.5, np.float32), shape=[]),
    },
    "v01_rust_sparse_coo": {
        "coo": dict(legacy_coo(np.array([1.5, -2.0], np.float64), [0, 1, 1, 2]),
                    shape=[2, 3]),
    },
    "v01_rust_sparse_csr": {
        "csr": dict(legacy_csr(np.array([1.0, 2.0, 3.0, 4.0], np.float64),
                               [2, 0, 3, 1], [0, 1, 3, 4]), shape=[3, 4]),
    },
}


# --- hand-made legacy files -------------------------------------------------
# A minimal CBOR encoder that mimics what serde_cbor 0.11 emits for the
# reference writer: definite outer array, each tensor map of *indefinite*
# length (0xBF ... 0xFF, a consequence of #[serde(flatten)]), keys in struct
# order, shortest-form integers.

def _cbor_head(major, n):
    if n < 24:
        return bytes([major << 5 | n])
    for extra, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if n < 1 << (8 * struct.calcsize(fmt)):
            return bytes([major << 5 | extra]) + struct.pack(fmt, n)
    raise ValueError(n)


def _cbor(value):
    if isinstance(value, bool):
        return b"\xf5" if value else b"\xf4"
    if isinstance(value, int):
        return _cbor_head(0, value) if value >= 0 else _cbor_head(1, -1 - value)
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return _cbor_head(3, len(raw)) + raw
    if isinstance(value, list):
        return _cbor_head(4, len(value)) + b"".join(_cbor(v) for v in value)
    raise TypeError(type(value))


def _cbor_indef_map(pairs):
    return b"\xbf" + b"".join(_cbor(k) + _cbor(v) for k, v in pairs) + b"\xff"


LONG_DTYPE = {v: k for k, v in SHORT_DTYPE.items()}


def write_handmade_v01(path, entries):
    """entries: list of (name, intent, extra dict of manifest fields)."""
    out = bytearray(MAGIC_V01)
    maps = []
    for name, intent, extra in entries:
        main = intent["components"]["data" if intent["format"] == "dense" else "values"]
        blob = legacy_blob(intent, len(intent["shape"]))
        pad = (-len(out)) % 64
        out += b"\x00" * pad
        offset = len(out)
        out += blob
        layout = {"dense": "dense", "sparse_coo": "sparsecoo",
                  "sparse_csr": "sparsecsr"}[intent["format"]]
        pairs = [("name", name), ("offset", offset), ("size", len(blob)),
                 ("dtype", LONG_DTYPE[short_dtype(main)]), ("layout", layout),
                 ("shape", list(intent["shape"])), ("encoding", "raw")]
        if main.dtype.itemsize > 1:
            pairs.append(("data_endianness", "little"))
        if extra.get("checksum") == "sha256":
            pairs.append(("checksum", "sha256:" + hashlib.sha256(blob).hexdigest()))
        maps.append(_cbor_indef_map(pairs))
    manifest = _cbor_head(4, len(maps)) + b"".join(maps)
    out += manifest + struct.pack("<Q", len(manifest))
    with open(path, "wb") as f:
        f.write(out)


def gen_v01_handmade(outdir):
    written = []
    files = {
        # COO: nnz records of [ndim x u64 index][value]; sizes are not
        # numel * dtype size, unlike the Rust-written v01_rust_sparse_coo.
        "v01_handmade_sparse_coo": [
            ("m", dict(legacy_coo(np.array([1.0, -2.5, 4.0], np.float32),
                                  [0, 1, 2,   3, 0, 3]), shape=[3, 4]), {}),
            ("t3", dict(legacy_coo(np.array([7, -8], np.int16),
                                   [0, 1,  2, 0,  1, 3]), shape=[2, 3, 4]), {}),
            ("dense_next", _dense(np.array([0.5, 1.5], np.float32)), {}),
        ],
        # CSR: [indptr u64 x rows+1][indices u64 x nnz][values]
        "v01_handmade_sparse_csr": [
            ("m", dict(legacy_csr(np.array([10, 20, 30, 40], np.int32),
                                  [1, 4, 0, 2], [0, 2, 2, 4]), shape=[3, 5]), {}),
            ("dense_next", _dense(np.array([3, 4], np.uint8)), {}),
        ],
        # a sha256 checksum: allowed by the v0.1 text, never written by 0.1.x
        "v01_handmade_sha256": [
            ("x", _dense(np.arange(6, dtype=np.float32).reshape(2, 3) / 2), {"checksum": "sha256"}),
        ],
    }
    for stem, entries in files.items():
        path = os.path.join(outdir, stem + ".zt")
        write_handmade_v01(path, entries)
        intents = {name: intent for name, intent, _ in entries}
        write_json(path[:-3] + ".json", v01_expectation(path, intents))
        written.append(path)
    return written


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--v12", action="store_true", help="use ztensor 1.2.3 (v1.2.0 files)")
    group.add_argument("--v01", action="store_true", help="use ztensor 0.1.4 (v0.1.0 files)")
    ap.add_argument("outdir")
    args = ap.parse_args()

    version = importlib.metadata.version("ztensor")
    wanted = REF_V12 if args.v12 else REF_V01
    if version != wanted:
        sys.exit(f"installed ztensor is {version}; this mode needs ztensor=={wanted}")
    os.makedirs(args.outdir, exist_ok=True)
    written = gen_v12(args.outdir) if args.v12 else gen_v01(args.outdir)
    total = 0
    for p in written:
        size = os.path.getsize(p)
        total += size + os.path.getsize(p[:-3] + ".json")
        print(f"{os.path.basename(p):45s} {size:6d} bytes")
    for fname, what, n, has_fcs, fcs, has_ck in sorted(ZSTD_NOTES):
        print(f"zstd frame {fname} {what} ({n} bytes decoded): "
              f"content size {'=' + str(fcs) if has_fcs else 'absent'}, "
              f"frame checksum {'present' if has_ck else 'absent'}")
    print(f"{len(written)} files, {total} bytes with their .json (ztensor {version})")


if __name__ == "__main__":
    main()
