#!/usr/bin/env python3
"""Open + list and load of a 1 GiB file per format, ztensor (its C library through
ctypes, from the same Python) against each format's own Python library:

  .npy    numpy.load(mmap_mode="r") / numpy.load
  .npz    numpy.load(...).files / every member loaded (stored members)
  .onnx   onnx.load(load_external_data=False) + names / onnx.load + numpy_helper.to_array
  .pt     torch.load(mmap=True) + keys / torch.load (skipped where torch doesn't import)

    python bench/foreign_formats.py [--lib build/lib/libztensor.so] [--dir bench/data]
                                    [--gib 1] [--runs 3] [--only npy,npz,onnx,pt]

Needs numpy and onnx (tests/interop/numpy-onnx-requirements.txt), torch optionally. The
files are written once into --dir (kept; about 4 GiB) and read warm: each case runs once
before the timed runs, and the median of --runs is reported. "open + list" opens the file
and reads every tensor's name, dtype and shape; "load" also brings every tensor's bytes
into process memory (ours: zt_component_read into numpy arrays, a copy out of the mapped
file or a decode; theirs: whatever their load returns, materialized). Ratio = theirs /
ours (above 1: ours is faster).
"""

import argparse
import ctypes
import gc
import os
import statistics
import sys
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--lib", default=os.path.join(os.path.dirname(__file__), "..", "build", "lib", "libztensor.so"))
ap.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "data"))
ap.add_argument("--gib", type=float, default=1.0)
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--only", default="npy,npz,onnx,pt", help="comma-separated: npy,npz,onnx,pt")
args = ap.parse_args()
os.makedirs(args.dir, exist_ok=True)
TOTAL = int(args.gib * (1 << 30))
PARTS = 16


class ObjectInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("format", ctypes.c_char_p),
                ("shape", ctypes.POINTER(ctypes.c_uint64)), ("ndim", ctypes.c_size_t),
                ("component_count", ctypes.c_size_t)]


class ComponentInfo(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("dtype", ctypes.c_uint32), ("type", ctypes.c_char_p),
                ("encoding", ctypes.c_uint32), ("offset", ctypes.c_uint64), ("length", ctypes.c_uint64),
                ("decoded_length", ctypes.c_uint64), ("digest", ctypes.c_char_p)]


lib = ctypes.CDLL(os.path.abspath(args.lib))
lib.zt_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
lib.zt_close.argtypes = [ctypes.c_void_p]
lib.zt_object_count.argtypes = [ctypes.c_void_p]
lib.zt_object_count.restype = ctypes.c_size_t
info_get = getattr(lib, "zt_object_get_info", None) or lib.zt_object_get_info
info_get.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ObjectInfo)]
comp_get = getattr(lib, "zt_component_get_info", None) or lib.zt_component_get_info
comp_get.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.POINTER(ComponentInfo)]
lib.zt_component_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p,
                                  ctypes.c_size_t]
lib.zt_last_error.restype = ctypes.c_char_p


def zt_list(path):
    r = ctypes.c_void_p()
    if lib.zt_open(path.encode(), ctypes.byref(r)) != 0:
        raise RuntimeError(lib.zt_last_error().decode())
    listed = []
    info, comp = ObjectInfo(), ComponentInfo()
    for i in range(lib.zt_object_count(r)):
        info_get(r, i, ctypes.byref(info))
        comp_get(r, i, 0, ctypes.byref(comp))
        listed.append((info.name, comp.dtype, tuple(info.shape[k] for k in range(info.ndim)),
                       comp.decoded_length))
    return r, listed


def zt_open_list(path):
    r, listed = zt_list(path)
    lib.zt_close(r)
    return listed


def zt_load(path):
    r, listed = zt_list(path)
    out = []
    for i, (_, _, _, n) in enumerate(listed):
        buf = np.empty(n, dtype=np.uint8)
        if lib.zt_component_read(r, i, b"data", buf.ctypes.data, n) != 0:
            raise RuntimeError(lib.zt_last_error().decode())
        out.append(buf)
    lib.zt_close(r)
    return out


def parts(dtype=np.float32):
    n = TOTAL // PARTS // np.dtype(dtype).itemsize
    rng = np.random.default_rng(29)
    return {f"layer.{i}.weight": rng.standard_normal(n, dtype=np.float32).reshape(-1, 1024)
            for i in range(PARTS)}


def files():
    wanted = set(args.only.split(","))
    made = {}
    tensors = None
    npy = os.path.join(args.dir, "foreign.npy")
    if "npy" in wanted:
        if not os.path.exists(npy):
            np.save(npy, np.random.default_rng(1).standard_normal(TOTAL // 4, dtype=np.float32).reshape(-1, 4096))
        made["npy"] = npy
    npz = os.path.join(args.dir, "foreign.npz")
    if "npz" in wanted:
        if not os.path.exists(npz):
            tensors = tensors or parts()
            np.savez(npz, **tensors)
        made["npz"] = npz
    onnx_path = os.path.join(args.dir, "foreign.onnx")
    if "onnx" in wanted:
        if not os.path.exists(onnx_path):
            import onnx
            from onnx import helper, numpy_helper
            tensors = tensors or parts()
            inits = [numpy_helper.from_array(v, k) for k, v in tensors.items()]
            model = helper.make_model(helper.make_graph([], "g", [], [], initializer=inits))
            onnx.save_model(model, onnx_path)
        made["onnx"] = onnx_path
    if "pt" in wanted:
        try:
            import torch
            pt = os.path.join(args.dir, "foreign.pt")
            if not os.path.exists(pt):
                tensors = tensors or parts()
                torch.save({k: torch.from_numpy(v) for k, v in tensors.items()}, pt)
            made["pt"] = pt
        except ImportError as e:
            print(f"torch: skipped ({e})")
    return made


def theirs(kind, path, load):
    if kind == "npy":
        a = np.load(path, mmap_mode=None if load else "r")
        return [a] if load else [(a.dtype, a.shape)]
    if kind == "npz":
        with np.load(path) as z:
            return [z[k] for k in z.files] if load else list(z.files)
    if kind == "onnx":
        import onnx
        from onnx import numpy_helper
        if load:
            m = onnx.load(path)
            return [numpy_helper.to_array(t) for t in m.graph.initializer]
        m = onnx.load(path, load_external_data=False)
        return [(t.name, t.data_type, tuple(t.dims)) for t in m.graph.initializer]
    if kind == "pt":
        import torch
        if load:
            return [t.contiguous().numpy() for t in torch.load(path, weights_only=True).values()]
        sd = torch.load(path, mmap=True, weights_only=True)
        return [(k, v.dtype, tuple(v.shape)) for k, v in sd.items()]
    raise ValueError(kind)


def timed(f):
    f()  # warm: page cache, imports
    gc.collect()
    ts = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        out = f()
        ts.append(time.perf_counter() - t0)
        del out
        gc.collect()
    return statistics.median(ts)


NAMES = {"npy": "numpy.load", "npz": "numpy.load (npz)", "onnx": "onnx.load + numpy_helper",
         "pt": "torch.load"}
rows = []
for kind, path in files().items():
    size = os.path.getsize(path)
    for case, load in (("open + list", False), ("load", True)):
        ours = timed(lambda: zt_load(path) if load else zt_open_list(path))
        ref = timed(lambda: theirs(kind, path, load))
        rows.append((kind, size, case, ours, NAMES[kind], ref))

print(f"{'file':<6} {'size':>9}  {'case':<12} {'ztensor':>10}  {'theirs':<26} {'time':>10}  ratio")
for kind, size, case, ours, who, ref in rows:
    print(f"{kind:<6} {size / 2**30:>7.2f}Gi  {case:<12} {ours * 1e3:>8.2f}ms  {who:<26} "
          f"{ref * 1e3:>8.2f}ms  {ref / ours:6.1f}x")
sys.stdout.flush()
