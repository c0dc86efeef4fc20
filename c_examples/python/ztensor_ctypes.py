#!/usr/bin/env python3
"""Read zTensor (.zt) files from Python through the C library, with ctypes and NumPy.

    python ztensor_ctypes.py FILE           # list the objects
    python ztensor_ctypes.py FILE NAME      # and show one tensor, viewed in place

FILE is any file zt_open reads: zTensor (.zt), safetensors, GGUF or Tensogram.

The library is found, in this order: the `library` argument of load_library(), the
ZTENSOR_LIBRARY environment variable (a path to libztensor.so), the build tree of this
repository (build/lib), then the system's library path (SONAME libztensor.so.0.2).

Views are zero-copy: Reader.view() wraps the pointer the C library returns in a
read-only NumPy array without copying. For a raw component of a mapped file that pointer
is inside the file's mapping. The array holds a reference to the open C reader (through
arr.base), so the mapping outlives the Reader object and its close(): the C reader is
closed when the Reader is closed *and* no array from it is left.

Errors raise ZtError (status, status name, the library's message). zt_last_error() is
per OS thread; a Python thread is one OS thread, so reading it right after the failing
call, in the same thread, is always right.
"""

import ctypes
import os
import sys
from collections import namedtuple

import numpy as np

SONAME = "libztensor.so.0.2"  # while 0.x every minor release may break the ABI

# zt_status values
ZT_OK = 0
ZT_ERR_INVALID_ARGUMENT = 1
ZT_ERR_IO = 2
ZT_ERR_FORMAT = 3
ZT_ERR_UNSUPPORTED = 4
ZT_ERR_NOT_FOUND = 5
ZT_ERR_CHECKSUM = 6
ZT_ERR_LIMIT = 7
ZT_ERR_BUFFER_TOO_SMALL = 8
ZT_ERR_STATE = 9
ZT_ERR_INTERNAL = 10
ZT_ERR_CANCELED = 11

# The NumPy dtype of each storage dtype, by the name zt_dtype_name() gives it (bf16 has
# none: its 16-bit patterns are shown as little-endian uint16)
NUMPY_DTYPES = {"f64": "<f8", "f32": "<f4", "f16": "<f2", "bf16": "<u2", "i64": "<i8", "i32": "<i4",
                "i16": "<i2", "i8": "i1", "u64": "<u8", "u32": "<u4", "u16": "<u2", "u8": "u1", "bool": "?"}
ENCODING_NAMES = ["raw", "zstd", "pipeline"]  # zt_encoding values


class zt_object_info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("format", ctypes.c_char_p),
                ("shape", ctypes.POINTER(ctypes.c_uint64)),
                ("ndim", ctypes.c_size_t),
                ("component_count", ctypes.c_size_t)]


class zt_component_info(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p),
                ("dtype", ctypes.c_uint32),
                ("type", ctypes.c_char_p),
                ("encoding", ctypes.c_uint32),
                ("offset", ctypes.c_uint64),
                ("length", ctypes.c_uint64),
                ("decoded_length", ctypes.c_uint64),
                ("digest", ctypes.c_char_p)]


class zt_view(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p),
                ("size", ctypes.c_uint64),
                ("dtype", ctypes.c_uint32),
                ("zero_copy", ctypes.c_bool)]


_reader_p = ctypes.c_void_p  # zt_reader * (opaque)
_status = ctypes.c_int       # C enums are int-sized
_SIGNATURES = {
    "zt_version": (ctypes.c_char_p, []),
    "zt_status_name": (ctypes.c_char_p, [ctypes.c_uint32]),
    "zt_last_error": (ctypes.c_char_p, []),
    "zt_dtype_name": (ctypes.c_char_p, [ctypes.c_uint32]),
    "zt_open": (_status, [ctypes.c_char_p, ctypes.POINTER(_reader_p)]),
    "zt_close": (None, [_reader_p]),
    "zt_file_version": (ctypes.c_char_p, [_reader_p]),
    "zt_file_format": (ctypes.c_char_p, [_reader_p]),
    "zt_object_count": (ctypes.c_size_t, [_reader_p]),
    "zt_object_find": (_status, [_reader_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t)]),
    "zt_object_get_info": (_status, [_reader_p, ctypes.c_size_t, ctypes.POINTER(zt_object_info)]),
    "zt_component_get_info": (_status, [_reader_p, ctypes.c_size_t, ctypes.c_size_t,
                                        ctypes.POINTER(zt_component_info)]),
    "zt_component_view": (_status, [_reader_p, ctypes.c_size_t, ctypes.c_char_p,
                                    ctypes.POINTER(zt_view)]),
}

ObjectInfo = namedtuple("ObjectInfo", "index name format shape components")
ComponentInfo = namedtuple("ComponentInfo", "role dtype type encoding offset length decoded_length digest")


class ZtError(Exception):
    """A failed zt_ call: .status (int), .status_name ("ZT_ERR_NOT_FOUND") and .message."""

    def __init__(self, status, status_name, message):
        super().__init__(f"{message} ({status_name})")
        self.status = status
        self.status_name = status_name
        self.message = message


def load_library(library=None):
    """Loads libztensor and declares the signatures used here."""
    candidates = []
    if library:
        candidates.append(library)
    elif os.environ.get("ZTENSOR_LIBRARY"):
        candidates.append(os.environ["ZTENSOR_LIBRARY"])
    else:
        here = os.path.dirname(os.path.abspath(__file__))
        in_tree = os.path.join(here, "..", "..", "build", "lib", SONAME)
        if os.path.exists(in_tree):
            candidates.append(in_tree)
        candidates.append(SONAME)
    errors = []
    for candidate in candidates:
        try:
            lib = ctypes.CDLL(candidate)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise OSError("libztensor not found (set ZTENSOR_LIBRARY): " + "; ".join(errors))
    for name, (restype, argtypes) in _SIGNATURES.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


class _Handle:
    """Owns one zt_reader *. Closed when the last reference goes: the Reader's, or that
    of an array viewing its memory."""

    def __init__(self, lib, ptr):
        self.lib = lib
        self.ptr = ptr

    def __del__(self):
        self.lib.zt_close(self.ptr)


class Reader:
    """An open .zt file (or any format zt_open reads)."""

    def __init__(self, path, lib=None):
        self._lib = lib if lib is not None else load_library()
        ptr = _reader_p()
        self._check(self._lib.zt_open(os.fsencode(path), ctypes.byref(ptr)))
        self._handle = _Handle(self._lib, ptr)

    def _check(self, status):
        if status != ZT_OK:
            message = self._lib.zt_last_error().decode()  # before any other zt_ call
            raise ZtError(status, self._lib.zt_status_name(status).decode(), message)

    def _ptr(self):
        if self._handle is None:
            raise ZtError(ZT_ERR_STATE, "ZT_ERR_STATE", "the reader is closed")
        return self._handle.ptr

    def close(self):
        """Drops this Reader's hold on the file. Arrays from view() stay valid: the C
        reader is closed once the last of them is gone."""
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def format(self):
        """The container format: "zt", "safetensors", "gguf" or "tensogram"."""
        return self._lib.zt_file_format(self._ptr()).decode()

    @property
    def version(self):
        """The format's version: "1.2.0" for zTensor 1.2, "3" for GGUF v3 ..."""
        return self._lib.zt_file_version(self._ptr()).decode()

    def __len__(self):
        return self._lib.zt_object_count(self._ptr())

    def find(self, name):
        index = ctypes.c_size_t()
        self._check(self._lib.zt_object_find(self._ptr(), name.encode(), ctypes.byref(index)))
        return index.value

    def object(self, index):
        info = zt_object_info()
        self._check(self._lib.zt_object_get_info(self._ptr(), index, ctypes.byref(info)))
        components = []
        for c in range(info.component_count):
            ci = zt_component_info()
            self._check(self._lib.zt_component_get_info(self._ptr(), index, c, ctypes.byref(ci)))
            components.append(ComponentInfo(
                ci.role.decode(), self._lib.zt_dtype_name(ci.dtype).decode(), ci.type.decode() if ci.type else None,
                ENCODING_NAMES[ci.encoding], ci.offset, ci.length, ci.decoded_length,
                ci.digest.decode() if ci.digest else None))
        shape = tuple(info.shape[i] for i in range(info.ndim))
        return ObjectInfo(index, info.name.decode(), info.format.decode(), shape, components)

    def objects(self):
        return [self.object(i) for i in range(len(self))]

    def raw_view(self, name, role="data"):
        """The zt_view of a component (data pointer, size, dtype, zero_copy)."""
        view = zt_view()
        self._check(self._lib.zt_component_view(self._ptr(), self.find(name), role.encode(),
                                                ctypes.byref(view)))
        return view

    def view(self, name, role="data"):
        """A read-only NumPy array over the component's bytes, without copying. The "data"
        component of a dense object gets the object's shape; other components are 1-D."""
        view = self.raw_view(name, role)
        dtype = np.dtype(NUMPY_DTYPES[self._lib.zt_dtype_name(view.dtype).decode()])
        info = self.object(self.find(name))
        shape = info.shape if (role == "data" and info.format == "dense") else (view.size // dtype.itemsize,)
        if view.size == 0:
            array = np.empty(0, dtype)
        else:
            # A ctypes array at the library's address: no copy. It carries the handle, so
            # the memory lives as long as any array viewing it.
            memory = (ctypes.c_ubyte * view.size).from_address(view.data)
            memory.zt_handle = self._handle
            array = np.frombuffer(memory, dtype=dtype)
        array.flags.writeable = False  # the mapping is read-only: a write would crash
        return array.reshape(shape)


def mapped_file(address):
    """The file whose mapping holds `address` in this process, or None (Linux:
    /proc/self/maps). Shows that a zero-copy view really points into the file."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                start, end = (int(x, 16) for x in fields[0].split("-"))
                if start <= address < end:
                    return fields[5].strip() if len(fields) == 6 else None
    except OSError:
        pass
    return None


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: ztensor_ctypes.py FILE [NAME]", file=sys.stderr)
        return 2
    try:
        return show(argv)
    except ZtError as e:
        print(f"ztensor_ctypes: {e}", file=sys.stderr)
        return 1


def show(argv):
    with Reader(argv[1]) as reader:
        print(f"{argv[1]}: {reader.format} {reader.version}, {len(reader)} objects")
        for o in reader.objects():
            shape = "[" + ", ".join(map(str, o.shape)) + "]"
            roles = ", ".join(f"{c.role}: {c.dtype}{'/' + c.type if c.type else ''} {c.encoding}"
                              for c in o.components)
            print(f"  {o.name}  {o.format} {shape}  {roles}")
        if len(argv) == 3:
            view = reader.raw_view(argv[2])
            array = reader.view(argv[2])
            if view.zero_copy:
                how = f"zero-copy, in the mapping of {mapped_file(view.data)}"
            else:
                how = "decoded copy owned by the reader"
            print(f"{argv[2]}: {array.dtype} {array.shape} at 0x{view.data:x} ({how}), "
                  f"owndata={array.flags.owndata}")
            print(np.array2string(array, separator=", "))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
