#!/usr/bin/env python3
"""The staged loader (zt_loader_*) and the CUDA backend (zt_cuda_*) from Python through
ctypes: the standard library only, so it runs on the device machine (no network, no
packages of ours) as well as here. bench_torch.py uses it with torch tensors as
destinations; its commands check it without a GPU:

    python3 ztloader.py layout GPU_LOAD            ctypes structs == the C header's
                                                   (GPU_LOAD is tests/gpu/gpu_load built)
    python3 ztloader.py host-check FILE.safetensors [OTHER]
                                                   every tensor whole and its 4th eighth of
                                                   columns into host memory (from OTHER, the
                                                   same weights in another file, if given),
                                                   compared with FILE's bytes parsed here

The library is $ZT_LIBRARY (a path to libztensor.so).
"""

import ctypes
import json
import os
import struct
import subprocess
import sys
from ctypes import POINTER, byref, c_char_p, c_int, c_int32, c_size_t, c_uint32, c_uint64, c_void_p

ZT_OK = 0
ZT_ERR_UNSUPPORTED = 4
ZT_LOAD_CONVERT = 2
ZT_LOAD_HOST = 4
ZT_LOAD_VERIFY = 8
ZT_SLICE_WHOLE, ZT_SLICE_ROWS, ZT_SLICE_COLUMNS = 0, 1, 2


class Request(ctypes.Structure):
    """zt_loader_request."""

    _fields_ = [
        ("object", c_size_t),
        ("role", c_char_p),
        ("dst", c_void_p),
        ("dst_offset", c_uint64),
        ("dst_size", c_uint64),
        ("flags", c_uint32),
        ("dtype", c_uint32),
        ("slice", c_uint32),
        ("status", c_uint32),
        ("first", c_uint64),
        ("count", c_uint64),
        ("bytes", c_uint64),
    ]


_CALLBACKS = [
    "host_alloc",
    "host_free",
    "host_register",
    "host_unregister",
    "copy_async",
    "event_create",
    "event_destroy",
    "event_record",
    "event_query",
    "event_wait",
    "read_direct",
    "error_string",
]


class Device(ctypes.Structure):
    """zt_device: filled by zt_cuda_get_device and passed on untouched."""

    _fields_ = [("struct_size", c_uint32), ("flags", c_uint32), ("context", c_void_p)] + [
        (name, c_void_p) for name in _CALLBACKS
    ]


class CudaOptions(ctypes.Structure):
    """zt_cuda_options."""

    _fields_ = [("struct_size", c_uint32), ("device", c_int32), ("stream", c_void_p), ("library", c_char_p)]


class LoaderOptions(ctypes.Structure):
    """zt_loader_options."""

    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("readers", c_uint32),
        ("staging_count", c_uint32),
        ("staging_size", c_uint64),
        ("staging", c_void_p),
        ("on_complete", c_void_p),
        ("on_progress", c_void_p),
        ("user", c_void_p),
        ("max_bytes_in_flight", c_uint64),
        ("io", c_uint32),
    ]


ZT_IO_AUTO, ZT_IO_MMAP, ZT_IO_PREAD, ZT_IO_DIRECT = 0, 1, 2, 3


class Error(Exception):
    def __init__(self, status, message):
        super().__init__(f"{message} (status {status})")
        self.status = status


def library(path=None):
    lib = ctypes.CDLL(path or os.environ["ZT_LIBRARY"])
    lib.zt_last_error.restype = c_char_p
    lib.zt_object_count.restype = c_size_t
    lib.zt_object_count.argtypes = [c_void_p]
    for name, args in {
        "zt_open": [c_char_p, POINTER(c_void_p)],
        "zt_object_find": [c_void_p, c_char_p, POINTER(c_size_t)],
        "zt_loader_create_with": [c_void_p, c_void_p, POINTER(c_void_p)],
        "zt_loader_load": [c_void_p, c_void_p, POINTER(Request), c_size_t],
        "zt_cuda_create_with": [POINTER(CudaOptions), POINTER(c_void_p)],
        "zt_cuda_get_device": [c_void_p, POINTER(Device)],
    }.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = c_int
    for name in ("zt_close", "zt_loader_free", "zt_cuda_free"):
        getattr(lib, name).argtypes = [c_void_p]
        getattr(lib, name).restype = None
    return lib


def check(lib, status, what):
    if status != ZT_OK:
        raise Error(status, f"{what}: {lib.zt_last_error().decode(errors='replace')}")


class Reader:
    def __init__(self, lib, path):
        self.lib, self.handle = lib, c_void_p()
        check(lib, lib.zt_open(os.fsencode(path), byref(self.handle)), f"opening {path}")

    def find(self, name):
        index = c_size_t()
        check(self.lib, self.lib.zt_object_find(self.handle, name.encode(), byref(index)), name)
        return index.value

    def close(self):
        if self.handle:
            self.lib.zt_close(self.handle)
            self.handle = c_void_p()


class Cuda:
    """The CUDA backend on `stream` (a cudaStream_t as an int; 0: a stream of its own)."""

    def __init__(self, lib, stream=0, device=0):
        self.lib, self.handle = lib, c_void_p()
        o = CudaOptions(ctypes.sizeof(CudaOptions), device, c_void_p(stream or None), None)
        check(lib, lib.zt_cuda_create_with(byref(o), byref(self.handle)), "opening the CUDA backend")
        self.device = Device()
        check(lib, lib.zt_cuda_get_device(self.handle, byref(self.device)), "zt_cuda_get_device")

    def close(self):
        if self.handle:
            self.lib.zt_cuda_free(self.handle)
            self.handle = c_void_p()


class Loader:
    """A zt_loader for `cuda`'s device, or host-only (None); `io` a ZT_IO_* read mode."""

    def __init__(self, lib, cuda=None, io=ZT_IO_AUTO):
        self.lib, self.handle = lib, c_void_p()
        device = byref(cuda.device) if cuda is not None else None
        options = LoaderOptions()
        options.struct_size = ctypes.sizeof(LoaderOptions)
        options.io = io
        check(lib, lib.zt_loader_create_with(device, byref(options), byref(self.handle)), "creating the loader")

    def load(self, reader, requests):
        """Loads a list of Request; raises on the first failure."""
        array = (Request * len(requests))(*requests)
        check(self.lib, self.lib.zt_loader_load(self.handle, reader.handle, array, len(requests)), "loading")
        return array

    def close(self):
        if self.handle:
            self.lib.zt_loader_free(self.handle)
            self.handle = c_void_p()


def request(object, dst, size, host=False, columns=None):
    """A request for `object`'s data into `dst` (an address); columns=(first, count)."""
    r = Request()
    r.object, r.dst, r.dst_size = object, dst, size
    r.flags = ZT_LOAD_HOST if host else 0
    if columns is not None:
        r.slice, r.first, r.count = ZT_SLICE_COLUMNS, columns[0], columns[1]
    return r


def eighth(shape, k=3):
    """(first, count) of the k-th eighth of the last dimension's columns."""
    count = shape[-1] // 8
    return count * k, count


def safetensors_layout(path):
    """{name: (shape, offset of its bytes in the file, size)} of a safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    base = 8 + n
    return {
        name: (h["shape"], base + h["data_offsets"][0], h["data_offsets"][1] - h["data_offsets"][0])
        for name, h in header.items()
        if name != "__metadata__"
    }


def columns_of(data, shape, width, first, count):
    rows = len(data) // width // shape[-1]
    row, part = shape[-1] * width, count * width
    return b"".join(data[r * row + first * width : r * row + first * width + part] for r in range(rows))


def host_check(path, other=None):
    lib = library()
    reader = Reader(lib, other or path)
    loader = Loader(lib)
    layout = safetensors_layout(path)
    buffers, requests, want = [], [], []
    with open(path, "rb") as f:
        for name, (shape, offset, size) in layout.items():
            f.seek(offset)
            data = f.read(size)
            index = reader.find(name)
            for cols in (None, eighth(shape)):
                expected = data if cols is None else columns_of(data, shape, 2, *cols)
                buf = ctypes.create_string_buffer(len(expected) or 1)
                buffers.append(buf)
                requests.append(request(index, ctypes.addressof(buf), len(expected), host=True, columns=cols))
                want.append(expected)
    done = loader.load(reader, requests)
    for k, (r, expected) in enumerate(zip(done, want)):
        got = ctypes.string_at(buffers[k], len(expected))
        if r.status != ZT_OK or r.bytes != len(expected) or got != expected:
            raise SystemExit(f"host-check: request {k} (object {r.object}): wrong status, size or bytes")
    loader.close()
    reader.close()
    print(f"host-check: {other or path}: {len(requests)} requests (every tensor whole and an eighth of its columns) right")


def layout_check(gpu_load):
    c = json.loads(subprocess.run([gpu_load, "layout"], check=True, capture_output=True, text=True).stdout)
    ours = {}
    for struct_name, cls in (
        ("zt_loader_request", Request),
        ("zt_device", Device),
        ("zt_cuda_options", CudaOptions),
        ("zt_loader_options", LoaderOptions),
    ):
        ours[f"sizeof.{struct_name}"] = ctypes.sizeof(cls)
        for field, _ in cls._fields_:
            ours[f"{struct_name}.{field}"] = getattr(cls, field).offset
    wrong = {k: (v, ours.get(k)) for k, v in c.items() if ours.get(k) != v}
    if wrong:
        raise SystemExit(f"layout: ctypes differs from the C header (C, ctypes): {wrong}")
    print(f"layout: the ctypes structs match the C header ({len(c)} sizes and offsets)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "layout":
        layout_check(sys.argv[2])
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "host-check":
        host_check(*sys.argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
