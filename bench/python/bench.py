#!/usr/bin/env python3
"""The Python package (ztensor_c) against safetensors and the reference package (ztensor
1.2.3) on W1 and W2, from Python: load_file (NumPy and PyTorch) and open + keys().

    python bench/python/bench.py [--quick] [--warm] [--runs N] [--dir DIR] [--out FILE]

Run it with a Python that has ztensor_c, safetensors, ztensor==1.2.3, numpy and ml_dtypes
(after `ctest -R python`, build/venv-python has them all); torch rows run when torch
imports and are skipped, saying so, otherwise.

Workloads: the names, dtypes and shapes of the Rust benchmark's (bench/src/workloads.rs,
the same generator):
W1, a Llama-style model in bf16 (300 tensors, 0.96 GiB; --quick: dimensions / 4), and
W2, 50,000 tensors of 1 to 4 KiB in f32/f16/bf16/i32/i8 (--quick: 3,125); on W2 also
safe_open + get_tensor of its first 2,000 names one by one (NumPy and PyTorch). Values are a
cheap deterministic pattern (raw loads don't look at them). Each is written three times
under DIR (default bench/data/python, git-ignored) and rewritten only when its spec
changes: `.zt` by ztensor_c, `.ref.zt` by the reference writer, `.safetensors` by
safetensors; each library reads its own file (and ztensor_c the safetensors one too).

Method: the page cache is warm (every file read once first); every case runs once untimed
and its result is checked against the written data (names, dtypes, shapes, bytes); then
N rounds (default 5, quick 3) in which every case of a comparison runs once, in an order
rotated each round, so load on the machine falls on all alike; a full garbage collection
runs before every timed call (what a program's first load sees: cold caches), unless
--warm. Reported: the median wall
time and the median CPU time of the process (user + system, all threads), and ours
against each peer as a ratio of medians (> 1: ours is faster). On a shared machine the
wall times of millisecond cases wander with the scheduler (a process waits whole time
slices); the CPU times don't, and the targets are read on them there. Loads drop their result
before the next run; the time to free it is not counted.

load_file returns what each library returns: ours and the reference's are views of the
file's mapping (nothing read until used), safetensors' numpy arrays are copies (every
byte read). The `copy=True` rows make ours read every byte into arrays of their own, the
like-for-like comparison with safetensors' numpy copies.
"""

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

import ztensor_c
import ztensor_c.numpy as zt_numpy

try:
    import ml_dtypes
except ImportError:
    sys.exit("ml_dtypes is needed (bf16 arrays)")
import safetensors
import safetensors.numpy as st_numpy

try:
    import ztensor as ref
    import ztensor.numpy as ref_numpy
except ImportError:
    ref = None

try:
    import torch
    import safetensors.torch as st_torch
    import ztensor_c.torch as zt_torch
except ImportError as e:
    torch = None
    TORCH_MISSING = f"torch is not installed ({e}): the torch rows are skipped"

GEN = "py-gen-v2"
DTYPES = {"bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype("<f2"), "f32": np.dtype("<f4"),
          "i32": np.dtype("<i4"), "i8": np.dtype("i1")}


# --- workloads ---------------------------------------------------------------------------
def w1(quick):
    hidden, inter, kv, vocab = (256, 896, 64, 8000) if quick else (1024, 3584, 256, 32000)
    specs = [("model.embed_tokens.weight", "bf16", (vocab, hidden))]
    for layer in range(33):
        for part, shape in [("input_layernorm", (hidden,)), ("self_attn.q_proj", (hidden, hidden)),
                            ("self_attn.k_proj", (kv, hidden)), ("self_attn.v_proj", (kv, hidden)),
                            ("self_attn.o_proj", (hidden, hidden)), ("post_attention_layernorm", (hidden,)),
                            ("mlp.gate_proj", (inter, hidden)), ("mlp.up_proj", (inter, hidden)),
                            ("mlp.down_proj", (hidden, inter))]:
            specs.append((f"model.layers.{layer}.{part}.weight", "bf16", shape))
    specs.append(("model.norm.weight", "bf16", (hidden,)))
    specs.append(("lm_head.weight", "bf16", (vocab, hidden)))
    return specs


def w2(quick):
    n = 50_000 // 16 if quick else 50_000
    state = 0x5EED0002 ^ 0x9E3779B97F4A7C15  # the Rust benchmark's generator (datagen.rs)
    specs = []
    for i in range(n):
        state = (state + 0xA0761D6478BD642F) % 2**64
        t = state * (state ^ 0xE7037ED1A0B428DB)
        r = (t >> 64) ^ (t % 2**64)
        size = (1024 + r % 3073) & ~7
        dt = ("f32", "f16", "bf16", "i32", "i8")[(r >> 32) % 5]
        numel = size // DTYPES[dt].itemsize
        shape = (16, numel // 16) if numel % 16 == 0 else (numel,)
        specs.append((f"blocks.{i // 100}.unit.{i % 100}.{('weight', 'bias', 'scale')[i % 3]}", dt, shape))
    return specs


def values(k, dt, shape):
    n = int(np.prod(shape))
    width = DTYPES[dt].itemsize
    pattern = (np.arange(n * width, dtype=np.uint64) * 2654435761 + k * 97) >> 13
    return pattern.astype(np.uint8).view(DTYPES[dt]).reshape(shape)


def arrays(specs):
    return {name: values(k, dt, shape) for k, (name, dt, shape) in enumerate(specs)}


def write(directory, wid, specs):
    """The three files of a workload, made when missing or when the spec changed."""
    os.makedirs(directory, exist_ok=True)
    spec = f"{GEN} {wid} {len(specs)} {sum(int(np.prod(s)) * DTYPES[d].itemsize for _, d, s in specs)}"
    paths = {k: os.path.join(directory, f"{wid.lower()}{ext}")
             for k, ext in (("ours", ".zt"), ("ref", ".ref.zt"), ("st", ".safetensors"))}
    stamp = os.path.join(directory, f"{wid.lower()}.stamp")
    if os.path.exists(stamp) and open(stamp).read() == spec and all(map(os.path.exists, paths.values())):
        return paths
    print(f"writing {wid} ({len(specs)} tensors) under {directory} ...", flush=True)
    data = arrays(specs)
    # zTensor 1.2: v2's canonical placement puts every blob at a 64 KiB boundary, which
    # makes W2's 50,000 tensors of 1 to 4 KiB a 3.2 GB file (ztensor 1.2.3's file is 1.2 too)
    with ztensor_c.Writer(paths["ours"], sync=False, version="1.2") as w:
        for name, a in data.items():
            w.add(name, a)
    st_numpy.save_file(data, paths["st"])
    if ref is not None:
        w = ref.Writer(paths["ref"])
        for name, a in data.items():
            w.add(name, a)
        w.finish()
    with open(stamp, "w") as f:
        f.write(spec)
    return paths


# --- measuring ---------------------------------------------------------------------------
def warm(path):
    """Every file cached the same way, whoever wrote it: its pages dropped (after fsync)
    and read back in 16 MiB reads. A file just written stays cached in the folios the
    writes made, and a mapping of smaller folios takes more faults to touch (a W1 file
    our writer had just written took twice safetensors' faults, whichever library read
    it)."""
    with open(path, "rb+") as f:
        os.fsync(f.fileno())
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        while f.read(1 << 24):
            pass


COLLECT = True  # a full collection before every timed call (--warm: none)


def timed(fn, reps=1):
    """(wall, CPU) seconds of one call of fn, averaged over `reps` calls in a row."""
    wall = cpu = 0.0
    for _ in range(reps):
        if COLLECT:
            gc.collect()
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        wall += time.perf_counter() - w
        cpu += time.process_time() - c
        del out
    return wall / reps, cpu / reps


def compare(title, cases, runs, check):
    """cases: [(label, fn)], ours first. Returns rows of medians."""
    reps = {}
    for label, fn in cases:  # warm-up and check; short cases repeat to 20 ms a turn
        check(label, fn())
        w, _ = timed(fn)
        reps[label] = max(1, min(50, int(0.02 / max(w, 1e-6))))
    walls = {label: [] for label, _ in cases}
    cpus = {label: [] for label, _ in cases}
    for r in range(runs):
        order = cases[r % len(cases):] + cases[:r % len(cases)]
        for label, fn in order:
            w, c = timed(fn, reps[label])
            walls[label].append(w)
            cpus[label].append(c)
    rows = []
    ours = cases[0][0]
    for label, _ in cases:
        rows.append({"metric": title, "who": label, "wall_s": statistics.median(walls[label]),
                     "cpu_s": statistics.median(cpus[label])})
    for row in rows:
        base = next(r for r in rows if r["who"] == ours)
        row["ours_faster_wall"] = row["wall_s"] / base["wall_s"]
        row["ours_faster_cpu"] = row["cpu_s"] / base["cpu_s"] if base["cpu_s"] else float("nan")
    return rows


def save_rows(directory, wid, specs, runs):
    """save_file of one dict of tensors: ours (safetensors, one pass through
    zt_writer_declare_data) without fsync as safetensors writes, and durable as our
    save_file is by default, against safetensors' save_file; NumPy, and torch where it
    imports. Every file's bytes are checked against safetensors' own."""
    data = arrays(specs)
    paths = {k: os.path.join(directory, f"save-{wid.lower()}-{k}.safetensors") for k in ("ours", "theirs")}

    def same_bytes(_label, _out):
        with open(paths["ours"], "rb") as f, open(paths["theirs"], "rb") as g:
            assert f.read() == g.read(), "save_file wrote other bytes than safetensors"

    st_numpy.save_file(data, paths["theirs"])
    cases = [("ztensor_c, no fsync", lambda: zt_numpy._write(data, paths["ours"], None, None, "none", sync=False)),
             ("safetensors", lambda: st_numpy.save_file(data, paths["theirs"])),
             ("ztensor_c, durable (save_file)", lambda: zt_numpy.save_file(data, paths["ours"]))]
    rows = compare(f"numpy.save_file {wid}", cases, runs, same_bytes)
    if torch is not None:
        tensors = {k: torch.from_numpy(v.view(np.uint16)).view(torch.bfloat16)
                   if v.dtype == DTYPES["bf16"] else torch.from_numpy(v) for k, v in data.items()}
        st_torch.save_file(tensors, paths["theirs"])
        cases = [("ztensor_c, no fsync", lambda: zt_torch._write(tensors, paths["ours"], None, None, "none", sync=False)),
                 ("safetensors", lambda: st_torch.save_file(tensors, paths["theirs"])),
                 ("ztensor_c, durable (save_file)", lambda: zt_torch.save_file(tensors, paths["ours"]))]
        rows += compare(f"torch.save_file {wid}", cases, runs, same_bytes)
    for path in paths.values():
        os.unlink(path)
    return rows


def checker(specs, torch_values=False):
    """Checks what a case returned: every name, and the dtype, shape and bytes of three
    of them."""
    expected = {name: (DTYPES[dt], tuple(shape), k) for k, (name, dt, shape) in enumerate(specs)}
    probe = [specs[0][0], specs[len(specs) // 2][0], specs[-1][0]]

    def check(label, out):
        if isinstance(out, list):  # keys()
            assert sorted(out) == sorted(expected), label
            return
        assert sorted(out) == sorted(expected), f"{label}: names"
        for name in probe:
            dt, shape, k = expected[name]
            a = out[name]
            if torch_values:
                a = a.view(torch.uint8).numpy() if a.dtype != torch.bfloat16 else a.view(torch.int16).numpy()
                raw = a.tobytes()
                assert tuple(out[name].shape) == shape, f"{label}: {name} shape"
            else:
                assert a.dtype == dt and a.shape == shape, f"{label}: {name} {a.dtype} {a.shape}"
                raw = np.asarray(a).tobytes()
            assert raw == values(k, specs[k][1], shape).tobytes(), f"{label}: {name} bytes"

    return check


# --- peak memory -------------------------------------------------------------------------
# Each load row's peak RSS, one process per case: the libraries imported and the file
# read once (warm page cache), the peak reset (/proc/self/clear_refs), the case run once
# with its result kept, then the peak above what the process held before (VmHWM - VmRSS).
RSS_CASES = {
    "numpy.load_file": {"ztensor_c": "zt_numpy.load_file(paths['ours'])",
                        "safetensors": "st_numpy.load_file(paths['st'])"},
    "numpy.load_file, own arrays": {"ztensor_c": "zt_numpy.load_file(paths['ours'], copy=True)",
                                    "safetensors": "st_numpy.load_file(paths['st'])"},
    "torch.load_file": {"ztensor_c": "zt_torch.load_file(paths['ours'])",
                        "safetensors": "st_torch.load_file(paths['st'])"},
    "torch.load_file, every page touched": {"ztensor_c": "_touched(zt_torch.load_file(paths['ours']))",
                                            "safetensors": "_touched(st_torch.load_file(paths['st']))"},
}


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def rss_child(metric, who, directory, wid, quick):
    specs = (w1 if wid == "W1" else w2)(quick)
    paths = write(directory, wid, specs)
    for path in paths.values():
        if os.path.exists(path):
            warm(path)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) is now the current RSS
    before = _status("VmRSS")
    result = eval(RSS_CASES[metric][who])  # noqa: S307 - one of the cases above
    peak = _status("VmHWM")
    assert len(result) == len(specs)
    print(json.dumps({"peak_bytes": peak - before}))


def peak_rss(metric, who, args, wid):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--rss", metric, who, wid, "--dir", args.dir]
                         + (["--quick"] if args.quick else []), capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_bytes"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--runs", type=int)
    p.add_argument("--dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                 "data", "python"))
    p.add_argument("--out")
    p.add_argument("--only", help="comma-separated: load,torch,keys,get,save (save: not by default)")
    p.add_argument("--warm", action="store_true",
                   help="no garbage collection before each timed call (caches stay warm)")
    p.add_argument("--rss", nargs=3, metavar=("METRIC", "WHO", "WID"), help=argparse.SUPPRESS)
    p.add_argument("--no-rss", action="store_true", help="skip the peak-memory rows")
    a = p.parse_args()
    if a.rss:
        return rss_child(a.rss[0], a.rss[1], a.dir, a.rss[2], a.quick)
    global COLLECT
    COLLECT = not a.warm
    runs = a.runs or (3 if a.quick else 5)
    only = set((a.only or "load,torch,keys,get").split(","))
    if ref is None:
        print("note: the reference package (ztensor==1.2.3) is not installed: its rows are skipped")
    rows, notes = [], []
    for wid, gen in (("W2", w2), ("W1", w1)):
        specs = gen(a.quick)
        paths = write(a.dir, wid, specs)
        for path in paths.values():
            if os.path.exists(path):
                warm(path)
        check = checker(specs)
        if "load" in only:
            cases = [("ztensor_c", lambda: zt_numpy.load_file(paths["ours"])),
                     ("safetensors", lambda: st_numpy.load_file(paths["st"]))]
            if ref is not None:
                cases.append(("ztensor 1.2.3", lambda: ref_numpy.load_file(paths["ref"])))
            cases.append(("ztensor_c, safetensors file", lambda: zt_numpy.load_file(paths["st"])))
            rows += compare(f"numpy.load_file {wid}", cases, runs, check)
            cases = [("ztensor_c copy=True", lambda: zt_numpy.load_file(paths["ours"], copy=True)),
                     ("safetensors", lambda: st_numpy.load_file(paths["st"]))]
            if ref is not None:
                cases.append(("ztensor 1.2.3 copy=True", lambda: ref_numpy.load_file(paths["ref"], copy=True)))
            rows += compare(f"numpy.load_file, own arrays {wid}", cases, runs, check)
        if "torch" in only:
            if torch is None:
                notes.append(f"torch.load_file {wid}: {TORCH_MISSING}")
            else:
                tcheck = checker(specs, torch_values=True)
                cases = [("ztensor_c", lambda: zt_torch.load_file(paths["ours"])),
                         ("safetensors", lambda: st_torch.load_file(paths["st"]))]
                if ref is not None:
                    import ztensor.torch as ref_torch
                    cases.append(("ztensor 1.2.3", lambda: ref_torch.load_file(paths["ref"])))
                rows += compare(f"torch.load_file {wid}", cases, runs, tcheck)
                cases = [("ztensor_c", lambda: _touched(zt_torch.load_file(paths["ours"]))),
                         ("safetensors", lambda: _touched(st_torch.load_file(paths["st"])))]
                rows += compare(f"torch.load_file, every page touched {wid}", cases, runs, tcheck)
        if "get" in only:
            names = [name for name, _dt, _shape in specs]
            frameworks = ["np"] + (["pt"] if torch is not None else [])
            for fw in frameworks:
                cases = [("ztensor_c safe_open", lambda fw=fw: _get(ztensor_c.safe_open(paths["ours"], fw), names)),
                         ("safetensors safe_open", lambda fw=fw: _get(safetensors.safe_open(paths["st"], fw), names))]
                rows += compare(f"safe_open + get_tensor of every name ({fw}) {wid}", cases, runs,
                                checker(specs, torch_values=fw == "pt"))
        if "save" in only:
            rows += save_rows(a.dir, wid, specs, runs)
        if "keys" in only and wid == "W2":
            cases = [("ztensor_c safe_open", lambda: _keys(ztensor_c.safe_open(paths["ours"], "np"))),
                     ("safetensors safe_open", lambda: _keys(safetensors.safe_open(paths["st"], "np"))),
                     ("ztensor_c Reader", lambda: ztensor_c.Reader(paths["ours"]).keys())]
            if ref is not None:
                cases.append(("ztensor 1.2.3 Reader", lambda: ref.Reader(paths["ref"]).keys()))
            cases.append(("ztensor_c safe_open, safetensors file", lambda: _keys(ztensor_c.safe_open(paths["st"], "np"))))
            rows += compare(f"open + keys() {wid}", cases, runs, check)
    if not a.no_rss and sys.platform.startswith("linux"):
        for wid in ("W2", "W1"):
            for metric, whos in RSS_CASES.items():
                if metric.startswith("torch") and torch is None:
                    continue
                if not any(metric in ("numpy.load_file", "numpy.load_file, own arrays") or "torch" in only
                           for _ in (0,)):
                    continue
                peaks = {who: peak_rss(metric, who, a, wid) for who in whos}
                for who, peak in peaks.items():
                    rows.append({"metric": f"peak RSS: {metric} {wid}", "who": who, "peak_mib": peak / 2**20,
                                 "ours_smaller": peaks["safetensors"] / peak if peak else float("inf")})
    report(rows, notes, a, runs)


def _keys(f):
    with f:
        return f.keys()


def _get(f, names):
    with f:
        return {name: f.get_tensor(name) for name in names}


PAGE = 4096


def _touched(tensors):
    """Reads one byte of every page of every tensor (what using the weights does)."""
    for t in tensors.values():
        flat = t.reshape(-1)
        if flat.numel():
            flat.view(torch.uint8)[::PAGE].sum()
    return tensors


def report(rows, notes, args, runs):
    info = (f"{platform.python_implementation()} {platform.python_version()}, numpy {np.__version__}, "
            f"safetensors {safetensors.__version__}, ztensor {getattr(ref, '__version__', '1.2.3') if ref else '-'}, "
            f"torch {torch.__version__ if torch else '-'}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
            f"{'quick, ' if args.quick else ''}{'warm, ' if args.warm else ''}{runs} runs, medians")
    print()
    print(info)
    print()
    print("| metric | who | wall (s) | CPU (s) | ours faster (wall) | ours faster (CPU) |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        if "peak_mib" in r:
            continue
        print(f"| {r['metric']} | {r['who']} | {r['wall_s']:.4f} | {r['cpu_s']:.4f} | "
              f"{r['ours_faster_wall']:.2f}x | {r['ours_faster_cpu']:.2f}x |")
    peaks = [r for r in rows if "peak_mib" in r]
    if peaks:
        print("\n| peak RSS above the process before the call | who | MiB | safetensors / ours |")
        print("|---|---|---:|---:|")
        for r in peaks:
            print(f"| {r['metric']} | {r['who']} | {r['peak_mib']:.1f} | {r['ours_smaller']:.2f}x |")
    for n in notes:
        print(f"\n{n}")
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                   "results-quick.json" if args.quick else
                                   "results-warm.json" if args.warm else "results.json")
    with open(out, "w") as f:
        json.dump({"info": info, "rows": rows, "notes": notes}, f, indent=1)
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
