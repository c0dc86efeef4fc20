#!/usr/bin/env python3
"""Dump a .zt file as seen by the reference reader (PyPI ztensor==1.2.3).

    python reference_dump.py FILE

Prints one JSON document on stdout, in the schema of
tests/vectors/reference/*.json:

    {"objects": [{"name", "format", "shape", "attributes",
                  "components": [{"role", "dtype", "type", "encoding", "data_hex"}]}]}

objects sorted by name, components sorted by role, dtype in the v1.2 short
spelling ("f32", "bf16", "u8", ...), data_hex = hex of the decoded component
bytes (little-endian element order) as the reference returns them.

Only the public API is used: Reader, Reader.keys(), Reader.metadata(),
Reader.read() (every component of every format) and, for dense objects,
Reader.read_numpy() (the everyday path), which must agree with read().

What the reference Python API cannot expose, and is therefore ABSENT from
the output (a comparison must only look at the keys present):
  * "version"    -- the reader never reports the spec version of the file;
  * "attributes" at file level -- file attributes are not readable at all;
  * "digest"     -- component metadata omits it; the reader only uses it to
                    verify (sha256 / crc32c) when data is read, so a bad digest
                    shows up as an error, not as a field;
  * "uncompressed_length", "offset", "length" are exposed in part but are
    layout details, not part of the schema.
Per-object "attributes" are exposed ({} here when the object has none);
bytes values are {"$bytes": "<hex>"}, and a non-finite float (which the
schema cannot carry) would be {"$float": "nan"|"inf"|"-inf"}.
Legacy v0.1 files are read through the same API; note that the reference
reader silently drops legacy sparse tensors and ignores data_endianness
(see tests/vectors/reference/README.md).

Exit status: 0 on success; on any error while opening or reading,
{"error": "<message>"} is printed and the exit status is 3; 2 for a wrong
command line.
"""

import json
import sys

SHORT_DTYPE = {
    "float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8",
    "uint64": "u64", "uint32": "u32", "uint16": "u16", "uint8": "u8",
    "bool": "bool",
}


def plain(value):
    """Attribute value from the reference API -> plain JSON."""
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return {"$float": repr(value)}
    return value


def le_hex(arr):
    import numpy as np
    a = np.ascontiguousarray(arr)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes().hex()


def dump(path):
    import ztensor

    reader = ztensor.Reader(path)
    objects = []
    for name in sorted(reader.keys()):
        meta = reader.metadata(name)
        tensor = reader.read(name, copy=True)
        comps = []
        for role in sorted(meta.components):
            cmeta = meta.components[role]
            comps.append({
                "role": role,
                "dtype": SHORT_DTYPE.get(cmeta["dtype"], cmeta["dtype"]),
                "type": cmeta.get("type"),
                "encoding": cmeta.get("encoding", "raw"),
                "data_hex": le_hex(tensor.components[role]),
            })
        if meta.format == "dense":
            via_numpy = le_hex(reader.read_numpy(name, copy=True))
            data = [c for c in comps if c["role"] == "data"]
            if not data or data[0]["data_hex"] != via_numpy:
                raise RuntimeError(f"read() and read_numpy() disagree on '{name}'")
        objects.append({
            "name": name,
            "format": meta.format,
            "shape": [int(d) for d in meta.shape],
            "attributes": plain(meta.attributes or {}),
            "components": comps,
        })
    return {"objects": objects}


def main(argv):
    if len(argv) != 2:
        print("usage: reference_dump.py FILE", file=sys.stderr)
        return 2
    try:
        doc = dump(argv[1])
    except Exception as exc:  # any failure of the reference reader
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 3
    # ASCII-only output (\uXXXX escapes) so the locale of the caller never matters.
    print(json.dumps(doc, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
