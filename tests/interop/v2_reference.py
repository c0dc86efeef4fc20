"""Drives the zTensor v2 reference implementation (PyPI ztensor==2.1.2) for
tests/interop_v2.rs.

    v2_reference.py write SPEC.json OUT.zt   write the models of a spec with ztensor.Writer
    v2_reference.py dump FILE.zt             print what ztensor.open reads, as JSON
    v2_reference.py convert SRC DST          ztensor.convert (canonical)

A spec is {"file_attributes": map or null, "objects": [{"name", "shape", "layout",
"attributes", "parts": {name: {"dtype", "logical", "hex"}}}]}. The canonical writer takes
objects in ascending name order, so they are written sorted. The dump lists every
object's shape, layout, attributes and parts (dtype, logical type, bytes as hex), the
file's attributes, and what ztensor.verify says (or the error of each step).
"""

import json
import sys

import numpy as np
import ztensor


def write(spec_path, out):
    spec = json.load(open(spec_path))
    w = ztensor.Writer(out)
    if spec.get("file_attributes") is not None:
        w.set_attributes(spec["file_attributes"])
    for o in sorted(spec["objects"], key=lambda o: o["name"].encode()):
        parts = {}
        for pname, p in o["parts"].items():
            entry = {"dtype": p["dtype"], "data": np.frombuffer(bytes.fromhex(p["hex"]), dtype=np.uint8)}
            if p.get("logical") is not None:
                entry["logical"] = p["logical"]
            parts[pname] = entry
        w.add_object(o["name"], o["shape"], parts, layout=o["layout"], attributes=o.get("attributes"))
    print(w.finish())


def plain(v):
    """Attribute values as JSON can carry them (bytes as {"$bytes": hex})."""
    if isinstance(v, bytes):
        return {"$bytes": v.hex()}
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def dump(path):
    out = {}
    try:
        src = ztensor.open(path)
    except Exception as e:  # noqa: BLE001 - the message is the result
        print(json.dumps({"error": f"open: {e}"}))
        return
    out["attributes"] = plain(src.attributes)
    objects = {}
    for name in src.keys():
        t = src[name]
        parts = {}
        for pname in t.parts:
            p = t[pname]
            parts[pname] = {"dtype": p.dtype, "logical": p.logical, "hex": p.tobytes().hex()}
        objects[name] = {"shape": list(t.shape), "layout": t.layout, "parts": parts}
    out["objects"] = objects
    try:
        checked, undigested = ztensor.verify(path, deep=False)
        out["verify"] = {"checked": checked, "undigested": undigested}
    except Exception as e:  # noqa: BLE001
        out["verify"] = {"error": str(e)}
    print(json.dumps(out))


def main():
    cmd = sys.argv[1]
    if cmd == "write":
        write(sys.argv[2], sys.argv[3])
    elif cmd == "dump":
        dump(sys.argv[2])
    elif cmd == "convert":
        print(ztensor.convert(sys.argv[2], sys.argv[3]))
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
