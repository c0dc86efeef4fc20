"""The reference `ztensor` package's 2.x API, for code written for it:

    import ztensor_c.v2 as ztensor

    with ztensor.open("model.safetensors") as src:     # or open([shard1, shard2])
        for name in src:                               # a mapping of names to handles
            t = src[name]
            print(t.name, t.shape, t.dtype, t.caps.map)
        arr = np.from_dlpack(src["w"])                 # zero-copy where mapped
    with ztensor.Writer("model.zt") as w:              # zTensor v2, canonical
        w.add("w", arr.tobytes(), shape=[2, 3], dtype="f32")
    ztensor.convert("model.safetensors", "model.zt")
    checked, undigested = ztensor.verify("model.zt")

A module of its own rather than a mode of `ztensor_c`: 1.x and 2.x give the same names
different meanings (`open` returns a Reader in 1.x, a mapping of handles here; `Writer.add`
takes an array there, bytes with shape and dtype here), so code written for either
imports the one it was written for. It runs on ztensor_c's reader and writer: every
format the library reads opens here, and Writer writes zTensor v2 through the library
(`ZT_WRITER_V2 | ZT_WRITER_CANONICAL`: 64 KiB placement, an xxh3 digest per part, canonical unless
`canonical=False`).

What differs from the reference, and why: `align` is honoured up to the 64 KiB every v2
blob already starts at (larger is refused); `append=True` rewrites the file with its
objects copied (`zt_writer_copy_object`) and the new ones after them, published as
every write is (the reference appends in place); `memoryview(t)` needs CPython 3.12 (a
class exports the buffer protocol from Python only since PEP 688); `t.evict()` is not
offered (caps.evict is False).
"""

import json
import mmap as _mmap
import os
from collections.abc import Mapping

import numpy as np

from .. import _dlpack, _dtypes
from .._handle import Handle
from .._lib import StateError, ffi, lib
from .._lib import check as _check
from .._writer import Writer as _V1Writer

__all__ = ["Caps", "Location", "Sink", "Source", "Tensor", "Verification", "Writer", "convert", "detect",
           "index", "open", "page_size", "verify"]

_RAW = lib.ZT_ENCODING_RAW
_V2_ALIGNMENT = 65536
_DTYPES = {name: code for code, name in enumerate(_dtypes.NAMES)}
_LOGICAL_V2 = {"f4_e2m1": "f4_e2m1fn_x2", "f6_e2m3": "f6_e2m3fn_x4", "f6_e3m2": "f6_e3m2fn_x4"}
_ENCODINGS = {None: None, "raw": None, "zt.zstd-seekable/1": True, "zstd": True}


def page_size():
    """The operating system's page size."""
    return _mmap.PAGESIZE


class Caps:
    """What one part can do: `map` (zero-copy export), `locate` (`.location` is the exact
    range of its decoded bytes), `evict`, `verify` (a digest is checked) and `alignment`
    (the largest power of two dividing its file offset)."""

    __slots__ = ("map", "locate", "evict", "verify", "alignment")

    def __init__(self, map, locate, evict, verify, alignment):
        self.map, self.locate, self.evict, self.verify, self.alignment = map, locate, evict, verify, alignment

    def __repr__(self):
        return (f"<Caps map={self.map} locate={self.locate} evict={self.evict} verify={self.verify} "
                f"alignment={self.alignment}>")


class Location:
    """Where a part's bytes are: `path`, `offset`, `nbytes`."""

    __slots__ = ("path", "offset", "nbytes")

    def __init__(self, path, offset, nbytes):
        self.path, self.offset, self.nbytes = path, offset, nbytes

    def __repr__(self):
        return f"<Location {self.path!r} +{self.offset} ({self.nbytes} bytes)>"


class Verification:
    """verify()'s answer: parts whose digest was `checked`, parts `undigested`; unpacks
    as (checked, undigested)."""

    __slots__ = ("checked", "undigested")

    def __init__(self, checked, undigested):
        self.checked, self.undigested = checked, undigested

    def __iter__(self):
        return iter((self.checked, self.undigested))

    def __eq__(self, other):
        return tuple(self) == tuple(other)

    def __repr__(self):
        return f"Verification(checked={self.checked}, undigested={self.undigested})"


class Source:
    """Open files as a read-only mapping of tensor names to `Tensor` handles."""

    def __init__(self, handles, label, mapped=True):
        self._handles = handles
        self._label = label
        self._mapped = mapped
        self._where = {}
        for h in handles:
            for name in h.names():
                if name in self._where:
                    raise ValueError(f"tensor {name!r} is in more than one of the files opened")
                self._where[name] = h

    def _open(self):
        if self._handles is None:
            raise ValueError("the source is closed")
        return self._where

    def keys(self):
        self._open()
        return [n for h in self._handles for n in h.names()]

    def values(self):
        return [Tensor(self, n) for n in self.keys()]

    def items(self):
        return [(n, Tensor(self, n)) for n in self.keys()]

    def get(self, name, default=None):
        return Tensor(self, name) if name in self._open() else default

    def __len__(self):
        return len(self._open())

    def __contains__(self, name):
        return name in self._open()

    def __getitem__(self, name):
        if name not in self._open():
            raise KeyError(name)
        return Tensor(self, name)

    def __iter__(self):
        return iter(self.keys())

    @property
    def attributes(self):
        """The file's attributes, or None."""
        self._open()
        attributes = self._handles[0].attributes()
        return attributes or None

    @property
    def files(self):
        """The files this source reads."""
        self._open()
        return [p for h in self._handles for p in h.shard_paths() if p is not None]

    @property
    def provenance(self):
        """"root" for a zTensor file, which states its own structure; "projection" for a
        foreign format or files opened together, whose structure the opener claims."""
        self._open()
        if len(self._handles) == 1 and self._handles[0].format == "zt" and len(self._handles[0].shard_paths()) == 1:
            return "root"
        return "projection"

    def verify(self, deep=False):
        """Verification of every part of every tensor (`deep`: the files' own digests too)."""
        return _verify_handles(self._handles if self._open() is not None else [], deep)

    def close(self):
        self._handles = None
        self._where = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        if self._handles is None:
            return f"<Source {self._label!r} closed>"
        return f"<Source {self._label!r}, {len(self)} tensors>"


Mapping.register(Source)


class Tensor:
    """One tensor, or one part of one (`t["scales"]`); holding it reads nothing. A tensor
    with one part answers about it; one with several needs the part named."""

    __slots__ = ("_source", "name", "_part")

    def __init__(self, source, name, part=None):
        self._source, self.name, self._part = source, name, part

    def _handle(self):
        where = self._source._open()
        h = where.get(self.name)
        if h is None:
            raise KeyError(self.name)
        return h, h.object(h.index_of(self.name))

    def _component(self):
        h, obj = self._handle()
        if self._part is not None:
            return h, obj, obj.component(self._part)
        if len(obj.components) == 1:
            return h, obj, obj.components[0]
        roles = [c.role for c in obj.components]
        raise KeyError(f"tensor {self.name!r} has {len(roles)} parts ({', '.join(sorted(roles))}); "
                       f"index the one you want, as t[{sorted(roles)[0]!r}]")

    @property
    def part(self):
        if self._part is not None:
            return self._part
        try:
            _h, obj = self._handle()
        except (KeyError, ValueError):
            return None
        return obj.components[0].role if len(obj.components) == 1 else None

    @property
    def shape(self):
        return list(self._handle()[1].shape)

    @property
    def layout(self):
        return self._handle()[1].format

    @property
    def dtype(self):
        """The storage type: "f32", "bf16", "u8" ..."""
        return _dtypes.NAMES[self._component()[2].dtype]

    @property
    def logical(self):
        """The logical type over the storage type ("f8_e4m3fn" ...), or None."""
        t = self._component()[2].type
        return {v: k for k, v in _LOGICAL_V2.items()}.get(t, t)

    @property
    def nbytes(self):
        return self._component()[2].decoded_length

    @property
    def parts(self):
        return sorted(c.role for c in self._handle()[1].components)

    def __getitem__(self, part):
        self._handle()[1].component(part)  # KeyError when it has none
        return Tensor(self._source, self.name, part)

    @property
    def caps(self):
        h, obj, c = self._component()
        raw = c.encoding == _RAW
        mapped = raw and self._source._mapped and h.kind == "mapped" and h.view(obj.index, c)[3]
        located = raw and _location(h, obj, c) is not None
        offset = c.offset
        alignment = offset & -offset if offset else 1 << 63
        return Caps(bool(mapped), bool(located), False, c.digest is not None, alignment)

    @property
    def location(self):
        h, obj, c = self._component()
        at = _location(h, obj, c) if c.encoding == _RAW else None
        if at is None:
            raise ValueError(f"{self.name!r}: its decoded bytes are not one range of one file")
        return at

    def tobytes(self):
        """The decoded bytes, copied."""
        h, obj, c = self._component()
        out = bytearray(c.decoded_length)
        if out:
            h.read_into(obj.index, c, out)
        return bytes(out)

    def verify(self):
        """True when every part (or the part indexed) carries a digest and it matched;
        False when one carries none; raises on a mismatch."""
        h, obj = self._handle()
        components = [obj.component(self._part)] if self._part is not None else obj.components
        for c in components:
            if c.digest is not None:
                _check(lib.zt_component_verify(h.ptr, obj.index, c.role.encode()))
        return bool(components) and all(c.digest is not None for c in components)

    def __repr__(self):
        try:
            shape = ",".join(map(str, self.shape))
        except Exception:  # noqa: BLE001 - a repr never raises
            shape = "?"
        part = self.part
        if part is not None:
            try:
                dtype = self.dtype
            except Exception:  # noqa: BLE001
                dtype = "?"
            return f"<Tensor {self.name!r} {dtype}[{shape}] {part}>"
        try:
            parts = ", ".join(self.parts)
        except Exception:  # noqa: BLE001
            parts = "?"
        return f"<Tensor {self.name!r} [{shape}] parts: {parts}>"

    # --- interchange --------------------------------------------------------------------
    def __buffer__(self, flags):  # CPython 3.12+ (PEP 688)
        if flags & 1:  # PyBUF_WRITABLE
            raise BufferError("tensor views are read-only")
        h, obj, c = self._component()
        if not (self._source._mapped and c.encoding == _RAW and h.views):
            raise BufferError("this tensor can't be exported as a buffer: its bytes are not a mapped "
                              "range (use .tobytes())")
        address, size, _d, zero = h.view(obj.index, c)
        if not zero:
            raise BufferError("this tensor's bytes are not a mapped range (use .tobytes())")
        buffer, offset = h.memory(address, size, obj.index, c.index)
        return memoryview(buffer[offset:offset + size]).toreadonly()

    def __dlpack_device__(self):
        return (_dlpack.KDL_CPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if stream is not None and stream != -1:
            raise ValueError("a CPU tensor takes no stream")
        if dl_device is not None and tuple(dl_device) != (_dlpack.KDL_CPU, 0):
            raise BufferError(f"this tensor is in CPU memory, not on device {tuple(dl_device)}")
        h, obj, c = self._component()
        mapped = self._source._mapped and c.encoding == _RAW and h.views
        raw = None
        if mapped:
            address, size, _d, zero = h.view(obj.index, c)
            if zero:
                buffer, offset = h.memory(address, size, obj.index, c.index)
                raw = np.asarray(buffer[offset:offset + size])
        if raw is None:
            if copy is False:
                raise BufferError(f"{self.name!r} has to be decoded: no zero-copy export of it")
            raw = np.empty(c.decoded_length, np.uint8)
            h.read_into(obj.index, c, raw)
            read_only, copied = False, True
        elif copy:
            raw, read_only, copied = raw.copy(), False, True
        else:
            read_only, copied = True, False  # the mapping is not the consumer's to write
        if c.type in _dtypes.LOGICAL and _dtypes.LOGICAL[c.type][0] == c.dtype:
            code, bits = _dtypes.LOGICAL[c.type][2]
        else:
            code, bits = _dtypes.DLPACK[c.dtype]
        shape = obj.shape if self._part is None or c.role == "data" else (c.decoded_length * 8 // bits,)
        if c.type in _dtypes.PACKED:
            shape = obj.shape
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        version = (1, 1) if code >= 10 else (1, 0)  # fp8, fp6, fp4 codes came with DLPack 1.1
        if version == (1, 1) and (max_version is None or tuple(max_version)[:2] < (1, 1)):
            raise TypeError(f"{self.name!r} is {c.type}, which DLPack names only from 1.1; this consumer "
                            f"takes at most {max_version}: read it with .tobytes()")
        return _dlpack.capsule(raw.ctypes.data, tuple(shape), code, bits, raw, read_only=read_only,
                               copied=copied, versioned=versioned, version=version)


def _location(h, obj, c):
    if h.kind == "remote":
        return None
    loc = ffi.new("zt_location *")
    if lib.zt_component_get_location(h.ptr, obj.index, c.index, loc) != lib.ZT_OK:
        return None
    paths = h.shard_paths()
    path = paths[loc.shard] if loc.shard < len(paths) else None
    if path is None or loc.length != c.decoded_length:
        return None
    return Location(path, loc.offset, loc.length)


def _paths(paths):
    return [os.fspath(p) for p in paths] if isinstance(paths, (list, tuple)) else [os.fspath(paths)]


def open(paths):
    """Opens a file (or the files of a list, as one mapping) for reading: any format the
    library reads. Raw tensors are mapped: zero-copy exports."""
    ps = _paths(paths)
    return Source([Handle.open(p) for p in ps], ps[0] if len(ps) == 1 else ps)


def index(paths):
    """Opens files without mapping them: tensors locate (`.location`) and read, but
    export nothing zero-copy."""
    ps = _paths(paths)
    return Source([Handle.open(p, mmap=False) for p in ps], ps[0] if len(ps) == 1 else ps, mapped=False)


def detect(path):
    """The format of a file: "zt", "safetensors", "gguf", "tensogram", "pytorch",
    "numpy", "onnx"."""
    return Handle.open(os.fspath(path), mmap=False).format


def _verify_handles(handles, deep):
    checked = undigested = 0
    for h in handles:
        if deep:
            h.verify()
        for i in range(h.count()):
            obj = h.object(i)
            for c in obj.components:
                if c.digest is None:
                    undigested += 1
                else:
                    _check(lib.zt_component_verify(h.ptr, i, c.role.encode()))
                    checked += 1
    return Verification(checked, undigested)


def verify(paths, deep=False):
    """Verifies every part of every tensor of a file: Verification(checked, undigested);
    ChecksumError on a mismatch."""
    return _verify_handles([Handle.open(p) for p in _paths(paths)], deep)


def convert(src, dst, *, canonical=True):
    """Writes every tensor of `src` (any format the library reads) to `dst` as zTensor
    v2: canonical, every part digested, so the result verifies."""
    h = Handle.open(os.fspath(src))
    with Writer(dst, canonical=canonical) as w:
        for i in range(h.count()):
            _check(lib.zt_writer_copy_object(w._w._writer(), h.ptr, i, ffi.NULL))
        attributes = h.attributes()
        if attributes:
            w.set_attributes(attributes)


class Sink:
    """One streamed part (`Writer.stream`): `write` its bytes in pieces of any size;
    leaving the `with` block ends the tensor."""

    def __init__(self, writer, part, nbytes):
        self._writer, self.part, self.nbytes, self.written = writer, part, nbytes, 0

    def write(self, data):
        view = memoryview(data).cast("B")
        _check(lib.zt_writer_write(self._writer._w._writer(), ffi.from_buffer(view), view.nbytes))
        self.written += view.nbytes

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            w = self._writer._w._writer()
            _check(lib.zt_writer_end_component(w))
            _check(lib.zt_writer_end_object(w))
        return False


def _part(spec):
    """(zt dtype, logical, compress) of a parts= entry or of add()'s arguments."""
    dtype = spec.get("dtype")
    if dtype not in _DTYPES:
        raise ValueError(f"dtype is one of {', '.join(_dtypes.NAMES)}, not {dtype!r}")
    logical = spec.get("logical")
    logical = _LOGICAL_V2.get(logical, logical)
    encoding = spec.get("encoding")
    if encoding not in _ENCODINGS:
        raise ValueError(f"encoding is None or 'zt.zstd-seekable/1', not {encoding!r}")
    return _DTYPES[dtype], logical, _ENCODINGS[encoding]


class Writer:
    """Writes a zTensor v2 file: canonical by default (the same tensors give the same
    bytes, whatever order they were added in), every blob at a 64 KiB boundary with an
    xxh3 digest. The file appears at its path only when `finish` succeeds (an exception
    in the `with` block leaves nothing), so `publish` is how every write ends.

        with Writer("m.zt") as w:
            w.add("w", data, shape=[2, 3], dtype="f32")
    """

    def __init__(self, path, *, canonical=True, align=None, publish=False, append=False, sync=True):
        if append and publish:
            raise ValueError("append and publish are two ways of writing: pick one")
        if align is not None and (align <= 0 or align & (align - 1) or align > _V2_ALIGNMENT):
            raise ValueError(f"align is a power of two up to {_V2_ALIGNMENT} (every v2 blob starts at "
                             f"a {_V2_ALIGNMENT}-byte boundary), not {align}")
        path = os.fspath(path)
        previous = Handle.open(path) if append and os.path.exists(path) else None
        # 64 KiB placement as the reference's writer places blobs (the library's default is
        # 4 KiB), in name order unless canonical=False
        flags = lib.ZT_WRITER_V2 | lib.ZT_WRITER_CANONICAL | (0 if canonical else lib.ZT_WRITER_KEEP_ORDER)
        self._w = _V1Writer(path, sync=sync, extra_flags=flags)
        if previous is not None:  # the file's objects first, then what is added
            for i in range(previous.count()):
                _check(lib.zt_writer_copy_object(self._w._writer(), previous.ptr, i, ffi.NULL))
            attributes = previous.attributes()
            if attributes:
                self.set_attributes(attributes)

    def add(self, name, data, *, shape=None, dtype=None, logical=None, encoding=None):
        """Adds a dense tensor from its bytes (any buffer; a NumPy array gives its own
        shape and dtype when they are not given)."""
        if isinstance(data, np.ndarray) and (shape is None or dtype is None):
            arr = np.ascontiguousarray(data)
            code, logical_np = _dtypes.from_numpy(arr.dtype)
            shape = arr.shape if shape is None else shape
            dtype = _dtypes.NAMES[code] if dtype is None else dtype
            logical = logical or logical_np
            data = arr
        if shape is None or dtype is None:
            raise TypeError("add(name, data, shape=..., dtype=...): shape and dtype are needed for bytes")
        code, logical, compress = _part({"dtype": dtype, "logical": logical, "encoding": encoding})
        self._w.add_bytes(name, memoryview(data).cast("B"), code, shape, logical, compress=compress,
                          checksum=None)

    def add_object(self, name, shape, parts, *, layout="dense", attributes=None):
        """Adds a tensor of several parts: {part: {"dtype", "data", "logical"?,
        "encoding"?}}, under `layout` ("dense", "zt.sparse_csr/1", or your own
        namespaced and versioned one, "acme.paged/1")."""
        w = self._w._writer()
        shape_c = ffi.new("uint64_t[]", [int(d) for d in shape]) if len(shape) else ffi.NULL
        _check(lib.zt_writer_begin_object(w, name.encode(), layout.encode(), shape_c, len(shape)))
        for role, spec in parts.items():
            code, logical, compress = _part(spec)
            view = memoryview(spec["data"]).cast("B")
            options = _options(compress)
            _check(lib.zt_writer_add_component(w, role.encode(), code,
                                               ffi.NULL if logical is None else logical.encode(),
                                               ffi.from_buffer(view), view.nbytes, options))
        if attributes:
            text = json.dumps(attributes).encode()
            _check(lib.zt_writer_set_object_attributes_json(w, name.encode(), text))
        _check(lib.zt_writer_end_object(w))

    def stream(self, name, shape, parts, *, layout="dense"):
        """A Sink for the one part of {part: {"dtype", "nbytes", "logical"?}}: its bytes
        are written as they come, never held whole."""
        if len(parts) != 1:
            raise ValueError("stream() writes one part")
        (role, spec), = parts.items()
        code, logical, compress = _part(spec)
        w = self._w._writer()
        shape_c = ffi.new("uint64_t[]", [int(d) for d in shape]) if len(shape) else ffi.NULL
        _check(lib.zt_writer_begin_object(w, name.encode(), layout.encode(), shape_c, len(shape)))
        _check(lib.zt_writer_begin_component(w, role.encode(), code,
                                             ffi.NULL if logical is None else logical.encode(),
                                             _options(compress)))
        return Sink(self, role, spec.get("nbytes"))

    def set_attributes(self, attributes):
        """The file's attributes (a dict of JSON-like values)."""
        self._w.set_attributes(attributes)

    def finish(self):
        self._w.finish()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return self._w.__exit__(exc_type, exc, tb)


def _options(compress):
    o = ffi.new("zt_write_options *")
    o.encoding = lib.ZT_ENCODING_ZSTD if compress else lib.ZT_ENCODING_RAW
    return o


assert StateError  # the errors ztensor_c raises are its own (ZtError), as in 1.x
