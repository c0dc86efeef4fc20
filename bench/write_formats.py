#!/usr/bin/env python3
"""Writing safetensors, GGUF and zTensor v2: ztensor (its C library through ctypes, from
the same Python, on the same numpy arrays) against the formats' own Python writers, and
the peak memory of streaming a 4 GiB file.

    python bench/write_formats.py [--lib build/lib/libztensor.so] [--dir bench/data]
                                  [--runs 3] [--quick] [--only w1,w2,rss,placement]

Needs numpy, safetensors and gguf (tests/interop/writers-requirements.txt pins them).

  W1  300 f16 tensors, 1.03 GiB (quick: 1/16)
  W2  50,000 tensors of 1 to 4 KiB, f32/f16/i32/i8 (quick: 3,125)

Rows (median of --runs, each run writing a new file, the file removed after):
  safetensors: ours non-durable (ZT_WRITER_NO_SYNC) vs safetensors.numpy.save_file (which
               doesn't sync), ours durable (the default: fsync + rename) beside it.
  GGUF:        ours non-durable vs gguf-py's GGUFWriter (header, key/values, tensors;
               doesn't sync), ours durable beside it.
  "ours" declares every tensor first (zt_writer_declare), then adds them in the order
  zt_writer_declared_order gives: the file written in one pass, front to back, as a
  save_file does. "declare_data": each tensor declared with its bytes
  (zt_writer_declare_data), finish writes them: one call per tensor. Beside it, non-durable: declared but added in the dict's order (tensors
  away from the cursor written to their place with pwrite), and not declared (spooled to
  a temporary file and copied into place at finish: two passes).
  Ratio = theirs / ours (above 1: ours is faster).
  rss:         a child process writes 4 GiB (quick: 256 MiB) of one tensor streamed in
               8 MiB pieces (zt_writer_begin_component / zt_writer_write), as safetensors
               and as GGUF, non-durable; its peak RSS (VmHWM) is reported beside the
               same child's before writing (Python, numpy and the library loaded).
  placement:   zTensor v2 of W1 and W2, 64 KiB (canonical) vs 4 KiB (ZT_WRITER_COMPACT)
               placement: file size, blocks on disk, write time, and the time to read
               every tensor back (zt_component_read) from a warm cache.
"""

import argparse
import ctypes
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

ap = argparse.ArgumentParser()
here = os.path.dirname(os.path.abspath(__file__))
ap.add_argument("--lib", default=os.path.join(here, "..", "build", "lib", "libztensor.so"))
ap.add_argument("--dir", default=os.path.join(here, "data"))
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--quick", action="store_true")
ap.add_argument("--only", default="w1,w2,rss,placement")
ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
args = ap.parse_args()
os.makedirs(args.dir, exist_ok=True)

lib = ctypes.CDLL(args.lib)
c_u64p = ctypes.POINTER(ctypes.c_uint64)


class WriterOptions(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint32), ("format", ctypes.c_uint32)]


NO_SYNC, HAS_FORMAT, COMPACT, CANONICAL = 1, 16, 32, 64
FMT_ZTENSOR, FMT_SAFETENSORS, FMT_GGUF = 1, 2, 3
DTYPES = {np.dtype("float32"): 1, np.dtype("float16"): 2, np.dtype("int32"): 5, np.dtype("int8"): 7}

lib.zt_writer_create_with.argtypes = [ctypes.c_char_p, ctypes.POINTER(WriterOptions), ctypes.POINTER(ctypes.c_void_p)]
lib.zt_writer_declare.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p, c_u64p, ctypes.c_size_t]
lib.zt_writer_declare_data.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p, c_u64p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
lib.zt_writer_declared_order.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
lib.zt_writer_add.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32, c_u64p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
lib.zt_writer_begin_object.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, c_u64p, ctypes.c_size_t]
lib.zt_writer_begin_component.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_void_p]
lib.zt_writer_write.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
for f in ("zt_writer_end_component", "zt_writer_end_object", "zt_writer_finish", "zt_writer_free"):
    getattr(lib, f).argtypes = [ctypes.c_void_p]
lib.zt_last_error.restype = ctypes.c_char_p
lib.zt_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
lib.zt_close.argtypes = [ctypes.c_void_p]
lib.zt_object_count.argtypes = [ctypes.c_void_p]
lib.zt_object_count.restype = ctypes.c_size_t
lib.zt_component_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]


def ok(status, what):
    if status != 0:
        raise RuntimeError(f"{what}: {lib.zt_last_error().decode()}")


def create(path, flags, fmt):
    o = WriterOptions(flags | HAS_FORMAT, fmt)
    w = ctypes.c_void_p()
    ok(lib.zt_writer_create_with(path.encode(), ctypes.byref(o), ctypes.byref(w)), "create")
    return w


def ours(path, tensors, flags, fmt, declare=True, file_order=True, with_data=False):
    """Writes `tensors`: declared first (in the dict's order) and added in the file's
    order, or in the dict's; or not declared (spooled); or declared with their data
    (zt_writer_declare_data: finish writes them)."""
    w = create(path, flags, fmt)
    items = [(name.encode(), a, (ctypes.c_uint64 * a.ndim)(*a.shape)) for name, a in tensors.items()]
    if with_data:
        for name, a, shape in items:
            ok(lib.zt_writer_declare_data(w, name, None, DTYPES[a.dtype], None, shape, a.ndim,
                                          a.ctypes.data, a.nbytes), "declare_data")
        items, declare = [], False
    if declare:
        for name, a, shape in items:
            ok(lib.zt_writer_declare(w, name, None, DTYPES[a.dtype], None, shape, a.ndim), "declare")
        if file_order:
            order = (ctypes.c_size_t * len(items))()
            n = ctypes.c_size_t()
            ok(lib.zt_writer_declared_order(w, order, len(items), ctypes.byref(n)), "order")
            items = [items[i] for i in order]
    for name, a, shape in items:
        ok(lib.zt_writer_add(w, name, DTYPES[a.dtype], shape, a.ndim, a.ctypes.data, a.nbytes, None), "add")
    ok(lib.zt_writer_finish(w), "finish")
    lib.zt_writer_free(w)


def st_theirs(path, tensors):
    from safetensors.numpy import save_file

    save_file(tensors, path)


def gguf_theirs(path, tensors):
    import gguf

    g = gguf.GGUFWriter(path, arch="llama")
    for name, a in tensors.items():
        g.add_tensor(name, a)
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()


def w1(scale):
    rng = np.random.default_rng(1)
    rows = max(1, 1024 // scale)
    return {f"model.layers.{i // 9}.w{i % 9}.weight": rng.standard_normal((rows, 1792), dtype=np.float32).astype(np.float16)
            for i in range(300)}


def w2(scale):
    rng = np.random.default_rng(2)
    kinds = [np.float32, np.float16, np.int32, np.int8]
    out = {}
    for i in range(50_000 // scale):
        dt = np.dtype(kinds[i % 4])
        nbytes = 1024 + (i * 769) % 3072
        n = max(1, nbytes // dt.itemsize)
        out[f"t.{i:05d}"] = (rng.integers(0, 100, n)).astype(dt)
    return out


def timed(fn, path):
    gc.collect()
    t = time.perf_counter()
    fn(path)
    dt = time.perf_counter() - t
    os.remove(path)
    return dt


def median_of(cases, path):
    """Runs every case once untimed, then --runs rounds of all of them, interleaved."""
    for name, fn in cases:
        fn(path)
        os.remove(path)
    times = {name: [] for name, _ in cases}
    for _ in range(args.runs):
        for name, fn in cases:
            times[name].append(timed(fn, path))
    return {name: statistics.median(v) for name, v in times.items()}


def speed(wid, tensors, results):
    size = sum(a.nbytes for a in tensors.values())
    for fmt, ext, theirs_name, theirs in (
        (FMT_SAFETENSORS, "safetensors", "safetensors.numpy.save_file", st_theirs),
        (FMT_GGUF, "gguf", "gguf-py GGUFWriter", gguf_theirs),
    ):
        path = os.path.join(args.dir, f"{wid.lower()}.out.{ext}")
        cases = [
            ("ours, non-durable", lambda p: ours(p, tensors, NO_SYNC, fmt)),
            ("ours, durable", lambda p: ours(p, tensors, 0, fmt)),
            (theirs_name, lambda p: theirs(p, tensors)),
            ("ours, dict order, non-dur.", lambda p: ours(p, tensors, NO_SYNC, fmt, file_order=False)),
            ("ours, spooled, non-durable", lambda p: ours(p, tensors, NO_SYNC, fmt, declare=False)),
            ("ours, declare_data, non-d.", lambda p: ours(p, tensors, NO_SYNC, fmt, with_data=True)),
        ]
        if fmt == FMT_GGUF:
            # GGUF's order is the order declared: the dict's.
            del cases[3]
        t = median_of(cases, path)
        theirs_t = t[theirs_name]
        for k, v in t.items():
            print(f"{wid} {ext:11s} {k:28s} {v * 1000:9.1f} ms  {size / v / 1e9:6.2f} GB/s"
                  + (f"  ratio {theirs_t / v:4.2f}x" if k.startswith("ours") else ""), flush=True)
        results.append({"workload": wid, "format": ext, "times_s": t, "bytes": size,
                        "load": os.getloadavg(),
                        "ratio_non_durable": theirs_t / t["ours, non-durable"],
                        "ratio_durable": theirs_t / t["ours, durable"]})


def peak_kib():
    # VmHWM: this process's peak resident set (ru_maxrss survives execve on Linux, so a
    # child started from this big parent would report the parent's).
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(spec):
    fmt, path, total, declare = spec.split(":")
    fmt, total, declare = int(fmt), int(total), declare == "1"
    piece = np.ones(8 << 20, dtype=np.uint8)
    before = peak_kib()
    w = create(path, NO_SYNC, fmt)
    n = total // 2
    shape = (ctypes.c_uint64 * 1)(n)
    if declare:
        ok(lib.zt_writer_declare(w, b"big", None, 2, None, shape, 1), "declare")
    ok(lib.zt_writer_begin_object(w, b"big", b"dense", shape, 1), "begin")
    ok(lib.zt_writer_begin_component(w, b"data", 2, None, None), "component")
    done = 0
    while done < total:
        k = min(piece.nbytes, total - done)
        ok(lib.zt_writer_write(w, piece.ctypes.data, k), "write")
        done += k
    ok(lib.zt_writer_end_component(w), "end")
    ok(lib.zt_writer_end_object(w), "end")
    ok(lib.zt_writer_finish(w), "finish")
    lib.zt_writer_free(w)
    after = peak_kib()
    print(json.dumps({"before_kib": before, "peak_kib": after, "size": os.path.getsize(path)}))


def rss(results):
    total = (256 << 20) if args.quick else (4 << 30)
    for fmt, ext, declare in ((FMT_SAFETENSORS, "safetensors", 1), (FMT_GGUF, "gguf", 1),
                              (FMT_SAFETENSORS, "safetensors", 0), (FMT_GGUF, "gguf", 0)):
        path = os.path.join(args.dir, f"big.out.{ext}")
        t = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "--lib", args.lib, "--child", f"{fmt}:{path}:{total}:{declare}"],
                             check=True, capture_output=True, text=True).stdout
        dt = time.perf_counter() - t
        r = json.loads(out)
        os.remove(path)
        how = "declared" if declare else "spooled"
        print(f"rss {ext:11s} {how:8s} {total / (1 << 30):.2f} GiB streamed in {dt:5.1f} s: peak RSS "
              f"{r['peak_kib'] / 1024:6.1f} MiB (before writing {r['before_kib'] / 1024:6.1f} MiB), "
              f"file {r['size'] / (1 << 30):.2f} GiB", flush=True)
        results.append({"rss": ext, "declared": bool(declare), "bytes": total, "seconds": dt, **r})


def placement(wid, tensors, results):
    for label, flags in (("64 KiB (canonical)", CANONICAL), ("4 KiB (compact)", COMPACT), ("default (no flag)", 0)):
        path = os.path.join(args.dir, f"{wid.lower()}.place.zt")
        times = []
        for _ in range(args.runs):
            if os.path.exists(path):
                os.remove(path)
            t = time.perf_counter()
            # The names in sorted order: written in place (canonical order), no reordering.
            w = create(path, NO_SYNC | flags, FMT_ZTENSOR)
            for name in sorted(tensors):
                a = tensors[name]
                shape = (ctypes.c_uint64 * a.ndim)(*a.shape)
                ok(lib.zt_writer_add(w, name.encode(), DTYPES[a.dtype], shape, a.ndim, a.ctypes.data, a.nbytes, None), name)
            ok(lib.zt_writer_finish(w), "finish")
            lib.zt_writer_free(w)
            times.append(time.perf_counter() - t)
        st = os.stat(path)
        # Read every tensor back (warm cache: once untimed).
        sizes = [tensors[n].nbytes for n in sorted(tensors)]
        reads = []
        for k in range(args.runs + 1):
            r = ctypes.c_void_p()
            t = time.perf_counter()
            ok(lib.zt_open(path.encode(), ctypes.byref(r)), "open")
            buf = ctypes.create_string_buffer(max(sizes))
            for i, n in enumerate(sizes):
                ok(lib.zt_component_read(r, i, b"data", buf, n), "read")
            lib.zt_close(r)
            if k:
                reads.append(time.perf_counter() - t)
        print(f"placement {wid} {label:20s} file {st.st_size / (1 << 20):9.1f} MiB, on disk "
              f"{st.st_blocks * 512 / (1 << 20):8.1f} MiB, write {statistics.median(times) * 1000:8.1f} ms, "
              f"open + read all {statistics.median(reads) * 1000:8.1f} ms")
        results.append({"placement": label, "workload": wid, "size": st.st_size, "on_disk": st.st_blocks * 512,
                        "write_s": statistics.median(times), "read_s": statistics.median(reads)})
        os.remove(path)


if args.child:
    child(args.child)
    sys.exit(0)

scale = 16 if args.quick else 1
only = set(args.only.split(","))
results = []
print(f"load average {os.getloadavg()} on {os.cpu_count()} CPUs", flush=True)
if "w1" in only or "placement" in only:
    W1 = w1(scale)
if "w2" in only or "placement" in only:
    W2 = w2(scale)
if "w1" in only:
    speed("W1", W1, results)
if "w2" in only:
    speed("W2", W2, results)
if "rss" in only:
    rss(results)
if "placement" in only:
    placement("W1", W1, results)
    placement("W2", W2, results)
out = os.path.join(here, "write-results-quick.json" if args.quick else "write-results.json")
with open(out, "w") as f:
    json.dump(results, f, indent=1)
print(f"results: {out}")
