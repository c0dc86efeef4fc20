#!/usr/bin/env python3
"""Compare every vector's X.json with what a reference reader returns.

    python check_with_reference.py [DIR]                  # venv with ztensor==1.2.3
    python check_with_reference.py --legacy-reader [DIR]  # venv with ztensor==0.1.4

Default mode: runs tests/interop/reference_dump.py (reference reader 1.2.3)
on every v12_*.zt and v01_*.zt in DIR (default: this script's directory) and
compares its output with X.json, on the keys the dump can expose (see the
dump's docstring: no version, no file attributes, no digests). One line per
file. Every v12 file must match, except where the reference reader is known
to be wrong (KNOWN below); legacy files are compared too, and the ways the
reference reader gets them wrong are listed for each file.

--legacy-reader: reads every dense tensor of the v01_*.zt files with the
legacy reader 0.1.4 (which applies data_endianness, zstd and crc32c) and
compares shape, dtype and bytes with X.json -- an independent check of the
legacy expectations, including those of the Rust-written files.

Exit status 0 when every file behaves as expected (matches, or differs
exactly as recorded in KNOWN), 1 otherwise.
"""

import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DUMP = os.path.join(HERE, "..", "..", "interop", "reference_dump.py")

# What the reference reader 1.2.3 is known to get wrong on these vectors:
# file -> substrings that every reported difference must contain one of.
KNOWN = {
    # compound logical types: the Python reader reshapes the f32/f64 storage
    # elements to the logical shape and fails
    "v12_type_complex64.zt": ["error: ValueError: cannot reshape"],
    "v12_type_complex128.zt": ["error: ValueError: cannot reshape"],
    # legacy data_endianness "big" is ignored: bytes come back un-swapped
    "v01_rust_bigendian.zt": ["data_hex"],
    # legacy sparse tensors are silently dropped
    "v01_rust_sparse_coo.zt": ["missing object"],
    "v01_rust_sparse_csr.zt": ["missing object"],
    "v01_handmade_sparse_coo.zt": ["missing object"],
    "v01_handmade_sparse_csr.zt": ["missing object"],
    # legacy custom per-tensor fields are not exposed as attributes
    "v01_rust_custom_fields.zt": ["attributes"],
}


def differences(expected, got):
    """List of human-readable differences on the keys `got` carries."""
    if "error" in got:
        return [f"error: {got['error']}"]
    out = []
    exp_objs = {o["name"]: o for o in expected["objects"]}
    got_objs = {o["name"]: o for o in got["objects"]}
    for name in sorted(set(exp_objs) - set(got_objs)):
        out.append(f"missing object {name!r}")
    for name in sorted(set(got_objs) - set(exp_objs)):
        out.append(f"unexpected object {name!r}")
    for name in sorted(set(exp_objs) & set(got_objs)):
        e, g = exp_objs[name], got_objs[name]
        for key in ("format", "shape", "attributes"):
            if key in g and g[key] != e[key]:
                out.append(f"{name}: {key} {g[key]!r} != expected {e[key]!r}")
        e_comps = {c["role"]: c for c in e["components"]}
        g_comps = {c["role"]: c for c in g["components"]}
        if sorted(e_comps) != sorted(g_comps):
            out.append(f"{name}: roles {sorted(g_comps)} != expected {sorted(e_comps)}")
        for role in sorted(set(e_comps) & set(g_comps)):
            for key in ("dtype", "type", "encoding", "digest", "data_hex"):
                if key in g_comps[role] and g_comps[role][key] != e_comps[role][key]:
                    gv, ev = g_comps[role][key], e_comps[role][key]
                    if key == "data_hex":
                        gv, ev = gv[:32] + ("..." if len(gv) > 32 else ""), \
                            ev[:32] + ("..." if len(ev) > 32 else "")
                    out.append(f"{name}/{role}: {key} {gv!r} != expected {ev!r}")
    return out


def run_dump(path):
    proc = subprocess.run([sys.executable, DUMP, path], capture_output=True, text=True)
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return {"error": f"no JSON (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"}
    if ("error" in doc) != (proc.returncode == 3):
        return {"error": f"exit status {proc.returncode} does not match output"}
    return doc


def check_reference(directory):
    files = sorted(glob.glob(os.path.join(directory, "v12_*.zt"))) + \
        sorted(glob.glob(os.path.join(directory, "v01_*.zt")))
    bad = known_bad = 0
    for path in files:
        fname = os.path.basename(path)
        with open(path[:-3] + ".json", encoding="utf-8") as f:
            expected = json.load(f)
        diffs = differences(expected, run_dump(path))
        known = KNOWN.get(fname)
        if not diffs and not known:
            print(f"OK        {fname}")
        elif not diffs:
            print(f"UNEXPECTED-OK {fname} (KNOWN lists a reference bug that did not show)")
            bad += 1
        elif known and all(any(k in d for k in known) for d in diffs):
            print(f"KNOWN-BAD {fname}: " + "; ".join(diffs))
            known_bad += 1
        else:
            print(f"FAIL      {fname}: " + "; ".join(diffs))
            bad += 1
    print(f"({known_bad} files show a known reference-reader bug and count as passed)")
    print(f"{len(files) - bad} passed, {bad} failed")
    return 1 if bad else 0


def check_legacy_reader(directory):
    import ztensor

    short = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
             "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8",
             "uint64": "u64", "uint32": "u32", "uint16": "u16", "uint8": "u8",
             "bool": "bool"}
    bad = 0
    files = sorted(glob.glob(os.path.join(directory, "v01_*.zt")))
    for path in files:
        fname = os.path.basename(path)
        with open(path[:-3] + ".json", encoding="utf-8") as f:
            expected = {o["name"]: o for o in json.load(f)["objects"]}
        problems, notes = [], []
        try:
            with ztensor.Reader(path) as r:
                metas = {m.name: m for m in r}
                for name, obj in expected.items():
                    m = metas.get(name)
                    if m is None:
                        problems.append(f"missing {name!r}")
                        continue
                    if obj["format"] != "dense":
                        try:
                            r.read_tensor(name)
                            notes.append(f"{name}: {obj['format']} read as a dense buffer")
                        except Exception as exc:
                            notes.append(f"{name}: {obj['format']} not readable: {exc}")
                        continue
                    comp = obj["components"][0]
                    # keep the returned view object itself alive while copying:
                    # np.asarray()/np.ascontiguousarray() of it drop the FFI owner
                    # and the buffer is freed under the new array
                    view = r.read_tensor(name)
                    data_hex = view.tobytes().hex()
                    del view
                    if list(m.shape) != obj["shape"]:
                        problems.append(f"{name}: shape {list(m.shape)} != {obj['shape']}")
                    if short[m.dtype_str] != comp["dtype"]:
                        problems.append(f"{name}: dtype {m.dtype_str} != {comp['dtype']}")
                    if m.checksum != comp["digest"]:
                        problems.append(f"{name}: checksum {m.checksum} != {comp['digest']}")
                    if m.encoding != comp["encoding"]:
                        problems.append(f"{name}: encoding {m.encoding} != {comp['encoding']}")
                    if data_hex != comp["data_hex"]:
                        problems.append(f"{name}: data differs")
        except Exception as exc:
            problems.append(f"error: {exc}")
        status = "FAIL " if problems else "OK   "
        bad += bool(problems)
        print(f"{status} {fname}" + (": " + "; ".join(problems + notes) if problems or notes
                                     else ""))
    print(f"{len(files) - bad} passed, {bad} failed")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--legacy-reader", action="store_true",
                    help="check v01 files with the legacy reader ztensor==0.1.4")
    ap.add_argument("directory", nargs="?", default=HERE)
    args = ap.parse_args()
    if args.legacy_reader:
        return check_legacy_reader(args.directory)
    return check_reference(args.directory)


if __name__ == "__main__":
    sys.exit(main())
