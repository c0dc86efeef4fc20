"""One open C reader and the arrays made from it.

Memory: files are mapped copy-on-write (ZT_OPEN_COPY_ON_WRITE: private and writable),
so the arrays that view a mapping are writable, and so are the torch tensors made from
them (PyTorch ignores NumPy's read-only flag: a read-only mapping made every write a
crash). A write changes this process's copy of the page only, never the file; arrays of
the same reader that show those bytes see it, as tensors of one safetensors safe_open do.
Arrays never view memory the C library keeps for itself (a decoded copy): those values
are copied into arrays of their own.

Lifetime: the `zt_reader *` is wrapped by `ffi.gc`, so `zt_close` runs when the last
Python object holding it is gone. Holding it are the `Handle` (what Reader, safe_open
and Tensor objects use) and, for every array viewing the reader's mapping, that array:
each such array's base chain ends at the uint8 array over the whole mapping, whose base
is a `ReaderMemory`, which holds a cdata whose destructor closure holds the reader. So
closing a Reader never unmaps memory an array still shows, and the file is closed as soon
as nothing uses it. The mapping arrays of a Handle are cached on the Handle, never on
what they keep alive, so no reference cycle forms.

Thread safety: the C reader is immutable after open and every call may run on any
thread at once; cffi releases the GIL around each call. The caches here are filled under
a lock or idempotently.
"""

import functools
import threading
from itertools import repeat

import numpy as np

from . import _dtypes, _lib, _plan, _sparse, _values
from ._lib import ffi, lib

_RAW = lib.ZT_ENCODING_RAW
_OK = lib.ZT_OK


class _Role:
    """What Handle.view needs of a component: its role (and index)."""

    __slots__ = ("role", "index")

    def __init__(self, role, index):
        self.role = role
        self.index = index


_DATA = _Role("data", 0)


@functools.lru_cache(maxsize=None)  # the same answer for the process
def _numpy_resolve(code, logical):
    """The NumPy dtype of a zt dtype code and logical type (bytes or None), and its size."""
    dt = _dtypes.numpy_dtype(code, None if logical is None else logical.decode())[0]
    return dt, dt.itemsize


class ReaderMemory:
    """A reader's mapping of one file as NumPy takes it (`__array_interface__`): the base
    of the uint8 array over the whole mapping, so at the end of the base chain of every
    array that views it, and what keeps the reader open while any of them lives."""

    __slots__ = ("__array_interface__", "_keep")

    def __init__(self, address, size, keep):
        self.__array_interface__ = {"data": (address, False), "shape": (size,), "typestr": "|u1",
                                    "version": 3}
        self._keep = keep


def view_array(buffer, dtype, shape, offset):
    """An array of `shape` over `buffer` (a uint8 array over a copy-on-write mapping, or
    memory the package owns) at `offset`."""
    count = 1
    for d in shape:
        count *= d
    arr = np.frombuffer(buffer, dtype, count, offset)
    return arr if len(shape) == 1 else arr.reshape(shape)


def _keep(owner):
    """A cffi destructor that does nothing but hold `owner` until its cdata is collected."""
    return lambda _cdata: owner


def _address(pointer):
    return int(ffi.cast("uintptr_t", pointer))


def _text(pointer):
    return None if pointer == ffi.NULL else ffi.string(pointer).decode("utf-8", "surrogateescape")


def is_url(path):
    """Whether the library opens `path` (bytes) as a URL (zt_path_is_url)."""
    return bool(lib.zt_path_is_url(path))


class Component:
    """One component of an object: role, storage dtype (a zt_dtype value), logical type,
    encoding and sizes, as zt_component_get_info gives them."""

    __slots__ = ("index", "role", "dtype", "type", "encoding", "offset", "length",
                 "decoded_length", "digest")

    def __init__(self, index, info):
        self.index = index
        self.role = _text(info.role)
        self.dtype = info.dtype
        self.type = _text(info.type)
        self.encoding = info.encoding
        self.offset = info.offset
        self.length = info.length
        self.decoded_length = info.decoded_length
        self.digest = _text(info.digest)

    def as_dict(self):
        return {"dtype": _dtypes.LONG_NAMES[self.dtype], "type": self.type,
                "encoding": ("raw", "zstd", "pipeline")[self.encoding] if self.encoding < 3 else str(self.encoding),
                "offset": self.offset, "length": self.length,
                "decoded_length": self.decoded_length, "digest": self.digest}


class Object:
    """One object: index, name, format, shape and components."""

    __slots__ = ("index", "name", "format", "shape", "components")

    def __init__(self, index, name, format, shape, components):
        self.index = index
        self.name = name
        self.format = format
        self.shape = shape
        self.components = components

    def component(self, role):
        for c in self.components:
            if c.role == role:
                return c
        raise KeyError(f"object '{self.name}' ({self.format}) has no component '{role}' "
                       f"(it has {', '.join(c.role for c in self.components)})")

    @property
    def primary(self):
        """The component whose dtype the object's dtype is: data, values, else the first."""
        for role in ("data", "values"):
            for c in self.components:
                if c.role == role:
                    return c
        return self.components[0] if self.components else None


class Handle:
    """An open `zt_reader *` with the Python-side caches of one Reader."""

    def __init__(self, reader, path, kind, memory=None):
        if memory is None:
            self.ptr = ffi.gc(reader, lib.zt_close)
        else:  # the reader borrows `memory`: its destructor holds it until zt_close ran
            self.ptr = ffi.gc(reader, lambda p, _memory=memory: lib.zt_close(p))
        self.path = path
        self.kind = kind  # "mapped", "pread", "memory" or "remote"
        self.views = kind in ("mapped", "memory")  # raw components are zero-copy
        self._lock = threading.Lock()
        self._regions = ()  # (start, end, uint8 array) of memory arrays may view
        self._names = None
        self._index = None
        self._at_offsets = None  # views_at_offsets(), once known
        self._paths = None  # shard_paths(), once known
        if memory is not None:  # the package's copy: views of it need only it, not the reader
            start = memory.ctypes.data
            self._regions = ((start, start + memory.nbytes, memory),)

    # --- opening -----------------------------------------------------------------------
    @classmethod
    def open(cls, path, *, mmap=True, verify=False, populate=False, all_shards=False,
             one_file=False, remote=None, **limits):
        flags = ((lib.ZT_OPEN_COPY_ON_WRITE if mmap else lib.ZT_OPEN_NO_MMAP) | (lib.ZT_OPEN_VERIFY if verify else 0)
                 | (lib.ZT_OPEN_POPULATE if populate else 0)
                 | (lib.ZT_OPEN_ALL_SHARDS if all_shards else 0)
                 | (lib.ZT_OPEN_ONE_FILE if one_file else 0))
        options = _open_options(limits)
        options.flags = flags
        out = ffi.new("zt_reader **")
        raw = _lib.fspath(path)
        url = is_url(raw)
        if remote is not None:
            if not url:
                raise ValueError("remote options are for URLs (s3://, gs://, az://, http(s)://)")
            remote_c, keep = _remote_options(remote)
            status = lib.zt_open_url_with(raw, options, remote_c, out)
            del keep
        else:
            status = lib.zt_open_with(raw, options, out)
        _lib.check(status)
        kind = "remote" if url else ("mapped" if mmap else "pread")
        return cls(out[0], raw.decode("utf-8", "surrogateescape"), kind)

    @classmethod
    def open_memory(cls, data, **limits):
        """Opens a copy of `data` (bytes-like) placed 64-byte aligned, so raw components
        are zero-copy views of it; the copy lives as long as the reader or its arrays,
        which may write to it (as to a copy-on-write mapping)."""
        view = memoryview(data).cast("B")
        store = np.empty(view.nbytes + 64, np.uint8)
        skip = (-store.ctypes.data) % 64
        memory = store[skip:skip + view.nbytes]
        memory[:] = view
        options = _open_options(limits)
        out = ffi.new("zt_reader **")
        _lib.check(lib.zt_open_memory_with(ffi.from_buffer(memory), memory.nbytes, options, out))
        return cls(out[0], None, "memory", memory)

    # --- what is in the file -----------------------------------------------------------
    @property
    def format(self):
        return ffi.string(lib.zt_file_format(self.ptr)).decode()

    @property
    def version(self):
        return ffi.string(lib.zt_file_version(self.ptr)).decode()

    def count(self):
        return lib.zt_object_count(self.ptr)

    def names(self):
        """Every object name in file order (one C call; cached)."""
        names = self._names
        if names is None:
            block = ffi.new("const char **")
            size = ffi.new("size_t *")
            _lib.check(lib.zt_file_get_names(self.ptr, block, size))
            n = size[0]
            if n == 0:
                names = []
            else:
                names = ffi.unpack(block[0], n - 1).decode("utf-8", "surrogateescape").split("\0")
            self._names = names
        return names

    def index_of(self, name):
        """The index of the object named `name`; KeyError (NotFoundError) if none."""
        try:
            return self._name_index()[name]
        except KeyError:
            if not isinstance(name, str):
                raise TypeError(f"tensor names are str, not {type(name).__name__}") from None
            out = ffi.new("size_t *")
            _lib.check(lib.zt_object_find(self.ptr, name.encode("utf-8", "surrogateescape"), out))
            return out[0]  # pragma: no cover - the C index and ours agree

    def _name_index(self):
        index = self._index
        if index is None:
            index = self._index = {n: i for i, n in enumerate(self.names())}
        return index

    def contains(self, name):
        return name in self._name_index()

    def object(self, index):
        info = ffi.new("zt_object_info *")
        _lib.check(lib.zt_object_get_info(self.ptr, index, info))
        shape = tuple(ffi.unpack(info.shape, info.ndim)) if info.ndim else ()
        ci = ffi.new("zt_component_info *")
        components = []
        for c in range(info.component_count):
            _lib.check(lib.zt_component_get_info(self.ptr, index, c, ci))
            components.append(Component(c, ci))
        return Object(index, _text(info.name), _text(info.format), shape, components)

    def attributes(self, index=None):
        out = ffi.new("const zt_value **")
        if index is None:
            _lib.check(lib.zt_file_get_attributes(self.ptr, out))
        else:
            _lib.check(lib.zt_object_get_attributes(self.ptr, index, out))
        return _values.convert(out[0])

    def attributes_json(self, index=None):
        out = ffi.new("const char **")
        if index is None:
            _lib.check(lib.zt_file_get_attributes_json(self.ptr, out))
        else:
            _lib.check(lib.zt_object_get_attributes_json(self.ptr, index, out))
        return ffi.string(out[0]).decode("utf-8", "surrogateescape")

    def shard_paths(self):
        """The path of every file (None for one opened from memory or a descriptor);
        cached: a reader's files don't change."""
        paths = self._paths
        if paths is None:
            out = ffi.new("const char **")
            paths = []
            for i in range(lib.zt_shard_count(self.ptr)):
                paths.append(_text(out[0]) if lib.zt_shard_get_path(self.ptr, i, out) == _OK else None)
            self._paths = paths
        return list(paths)

    def remote_stats(self):
        requests = ffi.new("uint64_t *")
        transferred = ffi.new("uint64_t *")
        _lib.check(lib.zt_file_get_remote_stats(self.ptr, requests, transferred))
        return requests[0], transferred[0]

    # --- memory ------------------------------------------------------------------------
    def _region(self, address, index, component):
        """(start, uint8 array) of the mapping holding `address`: a shard's whole mapping,
        made once per shard; None when the address is in none (a decoded copy)."""
        for start, end, view in self._regions:
            if start <= address < end:
                return start, view
        if self.kind != "mapped":
            return None
        loc = ffi.new("zt_location *")
        if lib.zt_component_get_location(self.ptr, index, component, loc) != _OK:
            return None
        region = self._mapping(loc.shard)
        if region is None or not region[0] <= address < region[0] + len(region[1]):
            return None
        return region

    def _mapping(self, shard):
        """(start, uint8 array) of a shard's whole (copy-on-write) mapping, made once per shard;
        None when it is not mapped (or empty)."""
        base = ffi.new("const void **")
        size = ffi.new("uint64_t *")
        if lib.zt_shard_get_mapping(self.ptr, shard, base, size) != _OK or size[0] == 0:
            return None
        start = _address(base[0])
        with self._lock:
            for s, _end, view in self._regions:
                if s == start:
                    return s, view
            keeper = ffi.gc(ffi.cast("char *", base[0]), _keep(self.ptr))
            view = np.asarray(ReaderMemory(start, size[0], keeper))
            self._regions = self._regions + ((start, start + size[0], view),)
        return start, view

    def memory(self, address, size, index, component):
        """A buffer of the `size` bytes at `address` (a view's memory), and the offset of
        the bytes in it: the mapping (or the package's in-memory copy) they are in, else
        (a decoded copy the library keeps) a copy of them of the caller's own, so that no
        array can write to the library's memory."""
        if size == 0:
            return np.empty(0, np.uint8), 0
        region = self._region(address, index, component)
        if region is not None:
            return region[1], address - region[0]
        own = np.empty(size, np.uint8)
        ffi.memmove(ffi.from_buffer(own, require_writable=True), ffi.cast("char *", address), size)
        return own, 0

    def view(self, index, component):
        """(address, size, zt dtype, zero_copy) of zt_component_view."""
        v = ffi.new("zt_view *")
        _lib.check(lib.zt_component_view(self.ptr, index, component.role.encode(), v))
        return _address(v.data), v.size, v.dtype, bool(v.zero_copy)

    # --- arrays ------------------------------------------------------------------------
    def component_array(self, index, component, shape, copy=False):
        """A component's values as a NumPy array: a view of the reader's (copy-on-write)
        mapping when the component is raw there (zero-copy), else a new array it is
        decoded into. Shaped `shape` when its size matches, else one dimension."""
        np_dtype, _per = _dtypes.numpy_dtype(component.dtype, component.type)
        count = component.decoded_length // np_dtype.itemsize
        n = 1
        for d in shape:
            n *= d
        if n != count:
            shape = (count,)
        if not copy and self.views and component.encoding == _RAW:
            address, size, _dtype, _zero = self.view(index, component)
            buffer, offset = self.memory(address, size, index, component.index)
            return view_array(buffer, np_dtype, shape, offset)
        out = np.empty(shape, np_dtype)
        self.read_into(index, component, out)
        return out

    def read_into(self, index, component, out):
        """Reads a component's stored values (decoded) into the C-contiguous buffer `out`
        (NumPy array or anything with the buffer protocol, of exactly its size)."""
        dst = ffi.from_buffer(out, require_writable=True)
        _lib.check(lib.zt_component_read(self.ptr, index, component.role.encode(), dst, len(dst)))

    def read_as(self, index, component, zt_dtype, shape, np_dtype):
        """The values converted (or dequantized) to `zt_dtype`, in a new array."""
        out = np.empty(shape, np_dtype)
        dst = ffi.from_buffer(out, require_writable=True)
        _lib.check(lib.zt_component_read_as(self.ptr, index, component.role.encode(), zt_dtype,
                                          dst, len(dst)))
        return out

    def value(self, index, copy=False):
        """What object `index` holds, as Python users expect it: a dense tensor as an
        array, a GGUF block-quantized one dequantized to float32, a sparse one as SciPy
        (or (data, indices, indptr) without SciPy), anything else as {role: array}."""
        obj = self.object(index)
        fmt = obj.format
        if fmt == "dense" and len(obj.components) == 1:
            return self.component_array(index, obj.components[0], obj.shape, copy)
        if fmt.startswith("ggml_"):
            return self.read_as(index, obj.component("data"), _dtypes.F32, obj.shape, np.float32)
        if fmt == "sparse_csr":
            return _sparse.csr(*(self.component_array(index, obj.component(r), (), copy)
                                 for r in ("values", "indices", "indptr")), obj.shape)
        if fmt == "sparse_coo":
            values = self.component_array(index, obj.component("values"), (), copy)
            coords = self.component_array(index, obj.component("coords"), (), copy)
            return _sparse.coo(values, coords.reshape(len(obj.shape), -1) if obj.shape else coords,
                               obj.shape)
        return {c.role: self.component_array(index, c, obj.shape if c.role == "data" else (), copy)
                for c in obj.components}

    def views_at_offsets(self):
        """True when a plain component's bytes can be read at its file's mapping + its
        offset, as the C API documents for mapped files ("a component's stored bytes are
        at base + offset in the file zt_component_get_location names"): a mapped reader of
        a format whose raw data is stored little-endian, as NumPy reads it (zTensor 1.x
        and v2, safetensors, GGUF, and sets of them; not legacy v0.1, which may be
        big-endian, nor Tensogram)."""
        known = self._at_offsets
        if known is None:
            fmt = self.format
            known = self._at_offsets = self.kind == "mapped" and (
                fmt in ("safetensors", "gguf") or (fmt == "zt" and not self.version.startswith("0.")))
        return known

    def indices(self, names_wanted=None):
        """Object indices in file order: all, or those of the names given."""
        if names_wanted is None:
            return range(self.count())
        return sorted({self.index_of(n) for n in names_wanted})

    def shard_arrays(self, shards):
        """{shard: a uint8 array over the file's whole (copy-on-write) mapping} for each
        file of `shards` when plain components are at mapping + offset (see
        views_at_offsets), else None. Arrays made with one as their buffer
        (np.ndarray(shape, dtype, it, offset)) are views of it, writable as it is."""
        if not self.views_at_offsets():
            return None
        out = {}
        for shard in shards:
            mapping = self._mapping(shard)
            if mapping is None:
                return None
            out[shard] = mapping[1]
        return out

    def load_dense(self, names_wanted=None, copy=False):
        """{name: value} of every object (or of `names_wanted`), in file order: dense raw
        components as views (zero-copy), other dense ones decoded in one parallel batch
        load, the rest through `value`. The fast path of numpy.load_file, where every
        object is dense and plain and its file mapped (one file, or every shard of a
        set): no Python per array (see _views)."""
        p = _plan.plan(self, self.indices(names_wanted), _numpy_resolve)
        views = self.views and not copy
        bases = self.shard_arrays(set(p.shard)) if views else None
        if bases is not None and p.all_dense_raw:
            out = dict(zip(p.names, _views(p, bases)))
            for k in _plan.aliases(p):
                out[p.names[k]] = out[p.names[k]].copy()
            return out
        out = dict.fromkeys(p.names)
        pending = []  # (index, array) decoded by one batch load
        for k, name in enumerate(p.names):
            i = p.indices[k]
            if not p.dense[k]:
                out[name] = self.value(i, copy)
            elif views and p.raw[k]:
                if bases is not None:  # the bytes are at the mapping + offset
                    out[name] = np.ndarray(p.shape[k], p.dtype[k], bases[p.shard[k]], p.offset[k])
                else:  # the library says where
                    address, size, _dtype, _zero = self.view(i, _DATA)
                    buffer, at = self.memory(address, size, i, 0)
                    out[name] = view_array(buffer, p.dtype[k], p.shape[k], at)
            else:
                arr = out[name] = np.empty(p.shape[k], p.dtype[k])
                pending.append((i, arr))
        if pending:
            self.batch_read(pending)
        if views:
            for k in _plan.aliases(p):
                if isinstance(out[p.names[k]], np.ndarray):
                    out[p.names[k]] = out[p.names[k]].copy()
        return out

    def batch_read(self, pending, role=None):
        """Reads the components of [(object index, destination array)] in one
        zt_batch_load call (parallel in the library, the GIL released)."""
        requests = ffi.new("zt_load_request[]", len(pending))
        keep = []
        role_c = ffi.NULL if role is None else ffi.new("char[]", role.encode())
        for k, (index, arr) in enumerate(pending):
            dst = ffi.from_buffer(arr, require_writable=True)
            keep.append(dst)
            r = requests[k]
            r.object = index
            r.role = role_c
            r.dst = dst
            r.dst_size = len(dst)
        status = lib.zt_batch_load(self.ptr, requests, len(pending), ffi.NULL)
        if status != _OK:
            raise _lib.error(status)

    def verify(self):
        _lib.check(lib.zt_file_verify(self.ptr))

    def validate(self, index):
        _lib.check(lib.zt_object_validate(self.ptr, index))


def _remote_options(remote):
    """A zt_remote_options from a dict, and the cdata that must outlive the call."""
    known = {"bearer_token", "headers", "config", "endpoint", "allow_http", "retry",
             "max_concurrency", "retries", "timeout_ms"}
    unknown = set(remote) - known
    if unknown:
        raise TypeError(f"unknown remote option(s): {', '.join(sorted(unknown))} "
                        f"(known: {', '.join(sorted(known))})")
    o = ffi.new("zt_remote_options *")
    keep = [o]

    def text(s):
        c = ffi.new("char[]", s.encode())
        keep.append(c)
        return c

    def texts(items):
        arr = ffi.new("const char *[]", [text(s) for s in items])
        keep.append(arr)
        return arr, len(items)

    if remote.get("bearer_token"):
        o.bearer_token = text(remote["bearer_token"])
    headers = remote.get("headers") or {}
    if isinstance(headers, dict):
        headers = [f"{k}: {v}" for k, v in headers.items()]
    if headers:
        o.headers, o.header_count = texts(list(headers))
    config = remote.get("config") or {}
    if isinstance(config, dict):
        config = [f"{k}={v}" for k, v in config.items()]
    if config:
        o.config, o.config_count = texts(list(config))
    if remote.get("endpoint"):
        o.endpoint = text(remote["endpoint"])
    o.flags = ((lib.ZT_REMOTE_ALLOW_HTTP if remote.get("allow_http") else 0)
               | (0 if remote.get("retry", True) else lib.ZT_REMOTE_NO_RETRY))
    for key in ("max_concurrency", "retries", "timeout_ms"):
        if remote.get(key) is not None:
            setattr(o, key, int(remote[key]))
    return o, keep


def _views(p, bases):
    """Every object's array (an iterator, in plan order) over `bases` ({shard: uint8
    array of its mapping}): a repeat of objects (a model's layers) one strided
    array per object of its first repeat, whose items are the arrays; objects between
    repeats one np.ndarray each, run by `map` (see _plan.cut)."""
    strides = _plan.Strides()
    one = bases[0] if len(bases) == 1 and 0 in bases else None

    def stacked(k, shape, repeats, stride):
        base, dtype, at = bases[p.shard[k]], p.dtype[k], p.offset[k]
        if not shape:  # the items of a 1-D array are scalars, not arrays
            return [np.ndarray((), dtype, base, at + j * stride) for j in range(repeats)]
        size = p.itemsize[k]
        return np.ndarray((repeats,) + shape, dtype, base, at,
                          (stride,) + tuple(s * size for s in strides[shape]))

    def loose(start, end):
        buffers = repeat(one) if one is not None else map(bases.__getitem__, p.shard[start:end])
        return map(np.ndarray, p.shapes(start, end), p.dtype[start:end], buffers, p.offset[start:end])

    return _plan.cut(p, stacked, loose)


def _open_options(limits):
    """A zt_open_options with the limits given by name (max_total_cached=..., ...)."""
    options = ffi.new("zt_open_options *")
    for key, value in limits.items():
        if key == "flags" or key not in _LIMITS:
            raise TypeError(f"unknown open option '{key}' (limits: {', '.join(_LIMITS)})")
        setattr(options, key, value)
    return options


_LIMITS = ("max_cbor_depth", "max_rank", "max_name_length", "max_manifest_size",
           "max_decoded_size", "max_total_cached")
