#!/usr/bin/env python3
"""Issue 27's table on a CUDA machine: safetensors.torch.load_file against the staged
loader (zt_loader_load through the CUDA backend, torch tensors as destinations, on
torch's current stream), after checking that every tensor the loader puts on the GPU is
equal to what safetensors.torch.load_file puts there.

    python3 bench_torch.py FILE.safetensors FILE.zt GPU_LOAD OUT_DIR [REPEATS]

FILE.zt is the same weights as zstd frames (gpu_load convert); GPU_LOAD the built
tests/gpu/gpu_load (for the plain-read limits). Prints a markdown table and writes
OUT_DIR/gpu-results.json. Exits 0 with a "skipped" line where torch has no CUDA device.
Needs torch and safetensors (the device machine has both) and $ZT_LIBRARY.
"""

import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ztloader  # noqa: E402


def drop_cache(path):
    """The file's pages out of the page cache (and every clean page where we may)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return "drop_caches"
    except OSError:
        return "posix_fadvise(DONTNEED)"


def timed(fn, repeats, cold_path=None):
    times = []
    for _ in range(repeats):
        if cold_path is not None:
            drop_cache(cold_path)
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    path, zt_path, gpu_load, out = argv[:4]
    repeats = int(argv[4]) if len(argv) > 4 else 3
    try:
        import torch
        from safetensors.torch import load_file
    except ImportError as e:
        print(f"skipped: torch or safetensors missing ({e})")
        return 0
    if not torch.cuda.is_available():
        print("skipped: torch sees no CUDA device")
        return 0
    os.makedirs(out, exist_ok=True)
    dev = torch.device("cuda:0")
    lib = ztloader.library()
    layout = ztloader.safetensors_layout(path)
    total = sum(size for _, _, size in layout.values())
    stream = torch.cuda.current_stream(dev).cuda_stream
    cuda = ztloader.Cuda(lib, stream=stream)
    loader = ztloader.Loader(lib, cuda)

    direct_loader = ztloader.Loader(lib, cuda, io=ztloader.ZT_IO_DIRECT)

    def ours(file, columns=False, loader=loader):
        """Opens `file`, allocates the tensors, loads them; returns {name: tensor}, bytes."""
        reader = ztloader.Reader(lib, file)
        tensors, requests, landed = {}, [], 0
        for name, (shape, _, size) in layout.items():
            cols = ztloader.eighth(shape) if columns else None
            t = torch.empty(shape[:-1] + [cols[1]] if cols else shape, dtype=torch.bfloat16, device=dev)
            nbytes = t.numel() * 2
            tensors[name] = t
            requests.append(ztloader.request(reader.find(name), t.data_ptr(), nbytes, columns=cols))
            landed += nbytes
        loader.load(reader, requests)
        torch.cuda.synchronize(dev)
        reader.close()
        return tensors, landed

    # --- correctness: every tensor equal to safetensors' --------------------------------
    ref = load_file(path, device="cuda:0")
    for label, file, columns in (("whole", path, False), ("columns 1/8", path, True), ("zstd .zt", zt_path, False)):
        got, _ = ours(file, columns)
        for name, (shape, _, _) in layout.items():
            want = ref[name]
            if columns:
                first, count = ztloader.eighth(shape)
                want = want[..., first : first + count]
            if not torch.equal(got[name], want):
                print(f"FAILED: {label}: {name} differs from safetensors.torch.load_file", file=sys.stderr)
                return 1
        del got
        print(f"check: {label}: {len(layout)} tensors equal to safetensors.torch.load_file")
    del ref
    torch.cuda.empty_cache()

    rows, results = [], {"file_bytes": total, "repeats": repeats, "device": torch.cuda.get_device_name(dev)}

    def row(key, label, seconds, nbytes=total):
        results[key] = {"median_s": seconds, "bytes": nbytes, "gbps": nbytes / seconds / 1e9}
        rows.append((label, seconds, nbytes / seconds / 1e9))

    def st_load():
        load_file(path, device="cuda:0")
        torch.cuda.synchronize(dev)

    # --- warm ---------------------------------------------------------------------------
    st_load()
    row("safetensors_warm", "`safetensors.torch.load_file(path, device=\"cuda:0\")`, warm", timed(st_load, repeats)[0])
    ours(path)
    row("ours_warm", "ours: `zt_loader_load` into torch tensors (CUDA backend), warm", timed(lambda: ours(path), repeats)[0])
    _, sliced = ours(path, True)
    row(
        "ours_columns8_warm",
        "ours: columns 1/8 of every tensor (strided), warm, per byte landed",
        timed(lambda: ours(path, True), repeats)[0],
        sliced,
    )
    pinned = torch.empty(1 << 30, dtype=torch.uint8, pin_memory=True)
    target = torch.empty(1 << 30, dtype=torch.uint8, device=dev)

    def h2d():
        for _ in range(8):
            target.copy_(pinned, non_blocking=True)
        torch.cuda.synchronize(dev)

    h2d()
    row("limit_pinned_h2d", "limit: pinned host -> device copy (8 x 1 GiB)", timed(h2d, repeats)[0], 8 << 30)
    del pinned, target

    # --- cold ---------------------------------------------------------------------------
    how = drop_cache(path)
    row("safetensors_cold", "`safetensors.torch.load_file`, cold", timed(st_load, repeats, path)[0])
    row("ours_cold", "ours: `zt_loader_load`, cold", timed(lambda: ours(path), repeats, path)[0])
    row(
        "ours_cold_direct",
        "ours: `zt_loader_load`, cold, O_DIRECT forced (`ZT_IO_DIRECT`)",
        timed(lambda: ours(path, loader=direct_loader), repeats, path)[0],
    )
    zt_size = os.path.getsize(zt_path)
    row(
        "ours_zstd_cold",
        f"ours: zstd .zt ({zt_size / 2**30:.2f} GiB on disk), cold, per decoded byte",
        timed(lambda: ours(zt_path), repeats, zt_path)[0],
    )
    for threads in (1, os.cpu_count() or 16):
        line = subprocess.run(
            [gpu_load, "read", path, str(threads), str(repeats)], check=True, capture_output=True, text=True
        ).stdout
        r = json.loads(line)
        row(f"limit_read_{threads}", f"limit: `pread` of the file, {threads} thread(s), cold", r["median_s"], r["bytes"])
    results["cold_by"] = how

    # --- the table ----------------------------------------------------------------------
    by = {k: v for k, v in results.items() if isinstance(v, dict)}
    st_warm = by["safetensors_warm"]["gbps"]
    fastest_read = max(v["gbps"] for k, v in by.items() if k.startswith("limit_read_"))
    results["ratios"] = {
        "warm_vs_safetensors": by["ours_warm"]["gbps"] / st_warm,
        "cold_vs_fastest_read": by["ours_cold"]["gbps"] / fastest_read,
        "cold_direct_vs_fastest_read": by["ours_cold_direct"]["gbps"] / fastest_read,
        "columns8_vs_whole_per_byte": by["ours_columns8_warm"]["gbps"] / by["ours_warm"]["gbps"],
        "zstd_cold_vs_raw_cold": by["ours_zstd_cold"]["gbps"] / by["ours_cold"]["gbps"],
    }
    print(f"\n{results['device']}, {total / 2**30:.2f} GiB bf16, median of {repeats}, cold by {how}\n")
    print("| path | time | GB/s |")
    print("|---|---|---|")
    for label, seconds, gbps in rows:
        print(f"| {label} | {seconds:.3f} s | {gbps:.2f} |")
    print("\nratios (targets: warm >= 5x safetensors and >= 25 GB/s; cold >= 0.9x the fastest read;")
    print("columns >= 0.8x whole per byte; zstd cold >= 1x raw cold):")
    for k, v in results["ratios"].items():
        print(f"  {k}: {v:.2f}")
    with open(os.path.join(out, "gpu-results.json"), "w") as f:
        json.dump(results, f, indent=1)
    loader.close()
    direct_loader.close()
    cuda.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
