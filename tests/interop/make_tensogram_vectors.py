"""Writes the Tensogram v3 test vectors in tests/vectors/tensogram/ with the real
`tensogram` package (pins: tests/interop/tensogram-requirements.txt) and, next to each
.tgm file, a .json expectation of what a reader must give, taken from
`tensogram.decode(...)` itself:

  {"objects": [{"name", "shape", "dtype", "logical_type", "encoding",
                "sha256", "hex"}], "messages": <count>}

- name: the reader's documented convention (base[i]["name"], else "object_<i>";
  "message_<m>/" in front when the file holds several messages).
- dtype / logical_type: the zTensor storage dtype and logical type.
- encoding: "raw" when the payload is stored plain (encoding, filter, compression all
  "none", no NaN/Inf masks, not a bitmask), else "pipeline".
- unsupported: the compressor's name, for objects this reader opens but can't decode
  (szip, blosc2, zfp, sz3); sha256 and hex are still what tensogram decodes.
- sha256 / hex: of the decoded bytes, little-endian, as tensogram.decode returns them
  (NaN/Inf restored; bitmask objects unpacked to one 0/1 byte per element). "hex" only
  for objects of at most 256 bytes.

Usage: python make_tensogram_vectors.py OUT_DIR
"""

import hashlib
import json
import os
import sys

import numpy as np
import tensogram

STORAGE = {
    "float16": ("f16", None), "bfloat16": ("bf16", None), "float32": ("f32", None),
    "float64": ("f64", None), "complex64": ("f32", "complex64"),
    "complex128": ("f64", "complex128"), "int8": ("i8", None), "int16": ("i16", None),
    "int32": ("i32", None), "int64": ("i64", None), "uint8": ("u8", None),
    "uint16": ("u16", None), "uint32": ("u32", None), "uint64": ("u64", None),
    "bitmask": ("bool", None),
}


def desc(shape, dtype, **kw):
    d = {"type": "ntensor", "shape": list(shape), "dtype": dtype}
    d.update(kw)
    return d


def expectations(messages):
    """What a reader must give for the concatenated messages, from tensogram.decode."""
    several = len(messages) > 1
    taken = set()
    objects = []
    for m, msg in enumerate(messages):
        decoded = tensogram.decode(msg)
        base = decoded.metadata.base
        for k, (d, arr) in enumerate(decoded.objects):
            entry = base[k] if k < len(base) else {}
            name = entry.get("name") if isinstance(entry.get("name"), str) else None
            name = name or f"object_{k}"
            if several:
                name = f"message_{m}/{name}"
            unique, n = name, 0
            while unique in taken:
                n += 1
                unique = f"{name}_{n}"
            taken.add(unique)
            dt = d.dtype
            if dt == "bitmask":
                n_el = int(np.prod(d.shape)) if d.shape else 1
                data = np.unpackbits(np.asarray(arr, dtype=np.uint8))[:n_el].astype(np.uint8)
            else:
                data = np.asarray(arr)
                if data.dtype.byteorder == ">":
                    data = data.astype(data.dtype.newbyteorder("<"))
            raw = data.tobytes()
            # The descriptor object doesn't show masks; an object has them exactly when
            # its decoded values hold a NaN or an infinity.
            masked = data.dtype.kind in "fc" and not np.isfinite(data).all()
            plain = (
                d.encoding == "none" and d.filter == "none" and d.compression == "none"
                and dt != "bitmask" and not masked
            )
            storage, logical = STORAGE[dt]
            unsupported = d.compression if d.compression in ("szip", "blosc2", "zfp", "sz3") else None
            obj = {
                "name": unique,
                "shape": list(d.shape),
                "dtype": storage,
                "logical_type": logical,
                "encoding": "raw" if plain else "pipeline",
                "sha256": hashlib.sha256(raw).hexdigest(),
                "unsupported": unsupported,
            }
            if len(raw) <= 256:
                obj["hex"] = raw.hex()
            objects.append(obj)
    return {"messages": len(messages), "objects": objects}


def write(out, name, messages):
    with open(os.path.join(out, name + ".tgm"), "wb") as f:
        for m in messages:
            f.write(bytes(m))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(expectations([bytes(m) for m in messages]), f, indent=1, sort_keys=True)
        f.write("\n")


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)

    # Raw payloads of several dtypes, buffered, hashed; one big-endian.
    t = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    write(out, "raw_dtypes", [tensogram.encode(
        {"base": [{"name": "temperature", "units": "K"}, {"name": "counts"},
                  {"name": "flags"}, {"name": "scalar"}, {"name": "half"},
                  {"name": "brain"}, {"name": "big_i32"}, {"name": "wave"}],
         "_extra_": {"source": "make_tensogram_vectors.py"}},
        [(desc([2, 3], "float32"), t),
         (desc([4], "int64"), np.array([-3, 0, 7, 2**40], dtype=np.int64)),
         (desc([5], "uint8"), np.array([0, 1, 2, 254, 255], dtype=np.uint8)),
         (desc([], "float64"), np.array(3.5)),
         (desc([3], "float16"), np.array([1.5, -2, 65504], dtype=np.float16).view(np.uint16)),
         (desc([2], "bfloat16"), np.array([0x3F80, 0xC000], dtype=np.uint16)),
         (desc([3], "int32", byte_order="big"), np.array([1, -2, 0x01020304], dtype=">i4").tobytes()),
         (desc([2], "complex64"), np.array([1 + 2j, 3 - 4j], dtype=np.complex64).view(np.float32)),
         ])])

    # simple_packing at several widths, alone and with zstd / shuffle.
    v = np.linspace(250.0, 260.0, 37)
    objs, base = [], []
    for bits in (0, 1, 7, 12, 16, 24, 33, 64):
        objs.append((desc([37], "float64", encoding="simple_packing", sp_bits_per_value=bits), v))
        base.append({"name": f"sp{bits}"})
    objs.append((desc([37], "float64", encoding="simple_packing", sp_bits_per_value=16,
                      sp_decimal_scale_factor=1, compression="zstd"), v))
    base.append({"name": "sp16_d1_zstd"})
    objs.append((desc([37], "float64", encoding="simple_packing", sp_bits_per_value=16,
                      filter="shuffle", shuffle_element_size=1, compression="lz4"), v))
    base.append({"name": "sp16_shuffle_lz4"})
    write(out, "simple_packing", [tensogram.encode({"base": base}, objs)])

    # Shuffle and compressors.
    f = (rng.standard_normal(64) * 10).astype(np.float32)
    d = rng.standard_normal(40)
    i = rng.integers(-1000, 1000, 50).astype(np.int32)
    write(out, "compressed", [tensogram.encode(
        {"base": [{"name": "shuffle_zstd"}, {"name": "lz4"}, {"name": "zstd_i32"},
                  {"name": "shuffle_lz4"}, {"name": "shuffle_only"}]},
        [(desc([8, 8], "float32", filter="shuffle", shuffle_element_size=4,
               compression="zstd", zstd_level=5), f.reshape(8, 8)),
         (desc([40], "float64", compression="lz4"), d),
         (desc([50], "int32", compression="zstd"), i),
         (desc([5, 8], "float64", filter="shuffle", shuffle_element_size=8,
               compression="lz4"), d.reshape(5, 8)),
         (desc([64], "float32", filter="shuffle", shuffle_element_size=4), f)])])

    # NaN / Inf masks with every pure-Rust method.
    x = np.linspace(-1, 1, 300)
    x[[3, 4, 5, 100, 299]] = np.nan
    x[[7, 200]] = np.inf
    x[[8]] = -np.inf
    objs, base = [], []
    for method in ("none", "rle", "roaring", "zstd", "lz4"):
        objs.append((desc([300], "float64"), x))
        base.append({"name": f"mask_{method}"})
    msgs = [tensogram.encode({"base": base[k:k + 1]}, objs[k:k + 1], allow_nan=True,
                             allow_inf=True, nan_mask_method=method,
                             pos_inf_mask_method=method, neg_inf_mask_method=method,
                             small_mask_threshold_bytes=0)
            for k, method in enumerate(("none", "rle", "roaring", "zstd", "lz4"))]
    y = x.astype(np.float32).reshape(20, 15)
    msgs.append(tensogram.encode({"base": [{"name": "mask_f32_zstd"}]},
                                 [(desc([20, 15], "float32", compression="zstd"), y)],
                                 allow_nan=True, allow_inf=True))
    write(out, "masks", msgs)

    # Streamed messages (total_length 0, footer frames), then a backfilled one, then a
    # buffered one without hashes; names repeat across messages.
    e = tensogram.StreamingEncoder({"base": [{"name": "a"}, {"name": "b"}]})
    e.write_object(desc([3], "uint16"), np.array([1, 2, 3], dtype=np.uint16))
    e.write_object(desc([2, 2], "float64", compression="zstd"), np.eye(2))
    first = e.finish()
    e = tensogram.StreamingEncoder({"base": [{"name": "a"}]})
    e.write_object(desc([4], "int8"), np.array([-1, 0, 1, 127], dtype=np.int8))
    second = e.finish_backfilled()
    third = tensogram.encode({"base": [{"name": "a"}, {}]},
                             [(desc([2], "uint32"), np.array([7, 8], dtype=np.uint32)),
                              (desc([10], "bitmask"),
                               np.packbits(np.array([1, 0, 1, 1, 0, 0, 0, 0, 1, 1], dtype=bool)))],
                             hash=None)
    write(out, "streamed_multi", [first, second, third])

    # Compressors this reader leaves out: the file opens, reading names the codec.
    w = np.linspace(0, 100, 64)
    szip = dict(szip_rsi=32, szip_block_size=16, szip_flags=8, compression="szip")
    write(out, "unsupported", [tensogram.encode(
        {"base": [{"name": "szip_i32"}, {"name": "sp_szip"}, {"name": "blosc2"},
                  {"name": "zfp"}, {"name": "sz3"}, {"name": "fine"}]},
        [(desc([64], "int32", **szip), w.astype(np.int32)),
         (desc([64], "float64", encoding="simple_packing", sp_bits_per_value=16, **szip), w),
         (desc([64], "float32", compression="blosc2"), w.astype(np.float32)),
         (desc([64], "float64", compression="zfp", zfp_mode="fixed_rate", zfp_rate=16.0), w),
         (desc([64], "float64", compression="sz3", sz3_error_bound_mode="abs",
               sz3_error_bound=0.01), w),
         (desc([2], "uint8"), np.array([4, 2], dtype=np.uint8))])])


if __name__ == "__main__":
    main(sys.argv[1])
