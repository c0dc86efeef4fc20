"""The formats' own packages beside our writer (tests/writers.rs).

  st-resave IN OUT    safetensors reads IN (ours) and writes its tensors and metadata
                      again with its own serialize_file into OUT: equal bytes means our
                      file is what safetensors writes.
  st-read IN          safetensors' numpy API loads IN; prints name, dtype, shape and the
                      sha256 of each tensor's bytes, as JSON.
  gguf-resave IN OUT  gguf-py's GGUFReader reads IN (ours) and its GGUFWriter writes the
                      same key/values (types and order kept) and tensors into OUT.
  gguf-resave-split OUT MAX IN...
                      the same for a split set IN... (ours), written again with
                      split_max_size=MAX.
"""

import hashlib
import json
import struct
import sys

import numpy as np


def st_resave(src, dst):
    import ctypes

    from safetensors import TensorSpec, deserialize, serialize_file

    raw = open(src, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    metadata = header.get("__metadata__")
    names = {
        "BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16",
        "U32": "uint32", "I32": "int32", "U64": "uint64", "I64": "int64",
        "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64",
        "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
        "F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2FNUZ": "float8_e5m2fnuz",
        "F8_E8M0": "float8_e8m0fnu", "F4": "float4_e2m1fn_x2", "C64": "complex64",
    }
    keep = []
    specs = {}
    for name, t in deserialize(raw):
        buf = (ctypes.c_char * max(1, len(t["data"]))).from_buffer_copy(bytes(t["data"]) or b"\0")
        keep.append(buf)
        shape = list(t["shape"])
        if t["dtype"] == "F4":
            # TensorSpec takes the storage shape of packed F4 (two values a byte).
            shape[-1] //= 2
        specs[name] = TensorSpec(
            dtype=names[t["dtype"]], shape=shape,
            data_ptr=ctypes.addressof(buf), data_len=len(t["data"]),
        )
    serialize_file(specs, dst, metadata=metadata)


def st_read(src):
    from safetensors import safe_open

    out = {}
    with safe_open(src, framework="numpy") as f:
        out["metadata"] = f.metadata()
        for k in f.keys():
            a = f.get_tensor(k)
            out[k] = {
                "dtype": str(a.dtype),
                "shape": list(a.shape),
                "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest(),
            }
    print(json.dumps(out, sort_keys=True))


def gguf_resave(src, dst, split_max_size=0, more=()):
    import gguf

    r = gguf.GGUFReader(src)
    fields = [f for f in r.fields.values() if not f.name.startswith("GGUF.")]
    arch = None
    if fields and fields[0].name == "general.architecture":
        arch = fields[0].contents()
        fields = fields[1:]
    fields = [f for f in fields if not f.name.startswith("split.")]
    w = gguf.GGUFWriter(dst, arch=arch or "", split_max_size=split_max_size)
    if arch is None:
        # GGUFWriter always writes general.architecture first: drop it when ours has none.
        w.kv_data[0].clear()
    for f in fields:
        vtype = f.types[0]
        sub = f.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        val = f.contents()
        if f.name == "general.alignment":
            w.data_alignment = val
        w.kv_data[0][f.name] = gguf.GGUFValue(value=val, type=vtype, sub_type=sub)
    tensors = list(r.tensors)
    for m in more:
        tensors += list(gguf.GGUFReader(m).tensors)
    for t in tensors:
        qt = gguf.GGMLQuantizationType(t.tensor_type)
        data = np.asarray(t.data)
        if qt in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16,
                  gguf.GGMLQuantizationType.F64, gguf.GGMLQuantizationType.I8,
                  gguf.GGMLQuantizationType.I16, gguf.GGMLQuantizationType.I32,
                  gguf.GGMLQuantizationType.I64):
            w.add_tensor(t.name, data.reshape(tuple(reversed([int(d) for d in t.shape]))))
        else:
            # bf16 and block types go as their bytes, with the type and shape given.
            from gguf.quants import quant_shape_to_byte_shape

            shape = tuple(reversed([int(d) for d in t.shape]))
            w.add_tensor(t.name, data.view(np.uint8),
                         raw_shape=quant_shape_to_byte_shape(shape, qt), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "st-resave":
        st_resave(sys.argv[2], sys.argv[3])
    elif cmd == "st-read":
        st_read(sys.argv[2])
    elif cmd == "gguf-resave":
        gguf_resave(sys.argv[2], sys.argv[3])
    elif cmd == "gguf-resave-split":
        # OUT MAX FIRST [MORE...]: our split set's tensors written again by GGUFWriter
        # with split_max_size=MAX into OUT (its shards named as gguf-py names them).
        gguf_resave(sys.argv[4], sys.argv[2], int(sys.argv[3]), sys.argv[5:])
    else:
        sys.exit(f"unknown command {cmd}")
