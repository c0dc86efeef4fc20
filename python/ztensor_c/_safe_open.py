"""safe_open: safetensors' lazy reader API, for every format the library reads."""

import json
from functools import partial

import numpy as np

from . import _dtypes, _lib, _plan
from ._handle import Handle
from ._lib import SafetensorError, ffi, lib

_FRAMEWORKS = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt", "pytorch": "pt"}


def _framework(name):
    try:
        return _FRAMEWORKS[name]
    except (KeyError, TypeError):
        raise ValueError(f"framework {name!r} is not supported (use 'np' or 'pt')") from None


class safe_open:
    """Opens a file lazily, as `safetensors.safe_open` does, and reads tensors one at a
    time:

        with ztensor_c.safe_open("model.safetensors", framework="pt", device="cpu") as f:
            for name in f.keys():
                t = f.get_tensor(name)
            rows = f.get_slice("embed.weight")[0:128, :]   # reads only those rows

    Any file the library reads works (zTensor, safetensors, GGUF, Tensogram, PyTorch,
    NumPy, ONNX, sets by index.json, URLs). framework "np" gives NumPy arrays (views of
    the file's copy-on-write mapping for raw data), "pt" torch tensors on `device`
    ("cpu", "cuda:0", an int ...).

    `backend` takes safetensors' values: "mmap" (the default) maps the file, so raw
    tensors are views of its pages, read as they are touched; "pread" maps nothing and
    reads each tensor's bytes into memory of its own when it is asked for (for files
    that may change while open, and file systems that map badly). Anything else is a
    SafetensorError, as in safetensors.
    """

    def __init__(self, filename, framework, device="cpu", backend="mmap"):
        if not isinstance(backend, str):
            what = "'None'" if backend is None else f"'{type(backend).__name__}' object"
            raise TypeError(f"argument 'backend': {what} is not an instance of 'str'")
        if backend not in ("mmap", "pread"):
            raise SafetensorError(f'backend "{backend}" is invalid (expected one of: "mmap", "pread")')
        self._framework = _framework(framework)
        self._storages = None
        if self._framework == "pt":
            import torch  # noqa: F401  (fail now, not on the first tensor)

            from . import _torch

            self._storages = _torch._Storages()
        self._device = _device(device)
        self._h = Handle.open(filename, mmap=backend == "mmap")
        # get_tensor of many names: after enough calls to pay for it, one plan of every
        # object (a C call for all of them) makes each later call a dict look-up and a view
        self._fast = None
        self._calls = 0
        self._fast_after = max(8, self._h.count() // 32)
        # zTensor v2 stores equal blobs once: {address: name} of the views given, so a
        # second name of one blob gets a copy (a write must not show through another name)
        self._owners = {} if self._h.format == "zt" and self._h.version.startswith("2") else None

    def _handle(self):
        if self._h is None:
            raise ValueError("the file is closed")
        return self._h

    def keys(self):
        """Every tensor name, sorted (as safetensors lists them)."""
        return sorted(self._handle().names())

    def offset_keys(self):
        """Every tensor name in file order."""
        return list(self._handle().names())

    def metadata(self):
        """The file's metadata as safetensors gives it: {str: str}, or None when it has
        none. A safetensors file's `__metadata__` as it is; the typed attributes of other
        formats (GGUF key/values, zTensor attributes) as text: strings as they are, any
        other value as its JSON. `attributes()` has them typed."""
        h = self._handle()
        attributes = h.attributes()
        if not attributes:
            return None
        if all(type(v) is str for v in attributes.values()):
            return {str(k): v for k, v in attributes.items()}
        text = json.loads(h.attributes_json())
        return {str(k): v if type(v) is str else json.dumps(v, ensure_ascii=False)
                for k, v in text.items()}

    def attributes(self):
        """The file's attributes typed, as `Reader.attributes` gives them ({} if none)."""
        return self._handle().attributes()

    def get_tensor(self, name):
        """The tensor `name`: raw data of a mapped file a view of its (copy-on-write)
        mapping, anything else decoded into memory of its own."""
        t = self._get_tensor(name)
        if self._owners is not None:
            t = self._unshared(name, t)
        return t

    def _unshared(self, name, t):
        """`t`, or a copy where another name's view has its bytes (one blob of a v2 file)."""
        if isinstance(t, np.ndarray):
            if not t.size:
                return t
            address = t.__array_interface__["data"][0]
            owner = self._owners.setdefault(address, name)
            return t if owner == name else t.copy()
        if getattr(t, "device", None) is not None and str(t.device) == "cpu" and t.numel():
            owner = self._owners.setdefault(t.data_ptr(), name)
            return t if owner == name else t.clone()
        return t

    def _get_tensor(self, name):
        fast = self._fast
        if fast is None:
            self._calls += 1
            if self._calls >= self._fast_after:
                fast = self._fast = _Fast(self._handle(), self._framework, self._storages)
        if fast:
            make = fast.makers.get(name)
            if make is not None:
                t = make()
                return t if self._device == "cpu" or self._framework == "np" else t.to(self._device)
        h = self._handle()
        if self._framework == "np":
            return h.value(h.index_of(name))
        from . import _torch

        return _torch.load(h, [name], self._device, storages=self._storages)[name]

    def get_tensors(self):
        """{name: tensor} of every tensor, in offset_keys() order (safetensors'
        get_tensors, which safetensors.numpy.load_file calls): get_tensor of each."""
        return {name: self.get_tensor(name) for name in self.offset_keys()}

    def get_slice(self, name):
        h = self._handle()
        return _Slice(h, h.object(h.index_of(name)), self._framework, self._device, self._storages)

    def close(self):
        self._h = None
        self._storages = None
        self._fast = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _Fast:
    """{name: a function making its value} for the objects whose value is a view of a
    mapped file at its offset (dense, raw, the format's bytes placed as NumPy reads
    them), from one plan of every object; empty when none is."""

    def __init__(self, h, framework, storages):
        self.makers = {}
        if not h.views_at_offsets():
            return
        from ._handle import _numpy_resolve

        if framework == "np":
            p = _plan.plan(h, range(h.count()), _numpy_resolve)
            bases = h.shard_arrays(set(p.shard))
            if bases is None:
                return
            ndarray = np.ndarray
            for k, name in enumerate(p.names):
                if p.dense[k] and p.raw[k]:
                    self.makers[name] = partial(ndarray, p.shape[k], p.dtype[k], bases[p.shard[k]], p.offset[k])
            return
        from . import _torch

        p = _plan.plan(h, range(h.count()), _torch._torch_resolve)
        paths = h.shard_paths()
        strides = _plan.Strides()
        for k, name in enumerate(p.names):
            size, at = p.itemsize[k], p.offset[k]
            path = paths[p.shard[k]]
            if p.dense[k] and p.raw[k] and path is not None and at % size == 0:
                shape = p.shape[k]
                self.makers[name] = partial(_torch_view, storages, path, p.dtype[k], shape, strides[shape],
                                            at // size)

    def __bool__(self):
        return bool(self.makers)


def _torch_view(storages, path, dtype, shape, strides, offset):
    return storages.flat(path, dtype).as_strided(shape, strides, offset)


def _device(device):
    if isinstance(device, int):
        return f"cuda:{device}"
    return str(device)


class _Slice:
    """A tensor not read yet: its shape and dtype, and `[...]` reading only the rows an
    index selects (a range read: for compressed data only the zstd frames holding them
    are decoded; for GGUF quantized data only their blocks are dequantized)."""

    def __init__(self, handle, obj, framework, device, storages=None):
        self._h = handle
        self._storages = storages
        self._obj = obj
        self._framework = framework
        self._device = device
        if obj.format == "dense" or obj.format.startswith("ggml_"):
            self._component = obj.component("data")
        else:
            raise ValueError(f"'{obj.name}' is {obj.format}: only dense and quantized tensors slice")

    def get_shape(self):
        return list(self._obj.shape)

    def get_dtype(self):
        c = self._component
        if self._obj.format.startswith("ggml_"):
            return "F32"  # read dequantized
        if c.type in _dtypes.LOGICAL and _dtypes.LOGICAL[c.type][3] is not None:
            return _dtypes.LOGICAL[c.type][3]
        return _dtypes.SAFETENSORS[c.dtype]

    @property
    def shape(self):
        return self.get_shape()

    @property
    def ndim(self):
        return len(self._obj.shape)

    def __len__(self):
        if not self._obj.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._obj.shape[0]

    def __getitem__(self, key):
        """The part of the tensor `key` selects, indexed as safetensors indexes it:

        - framework "pt": as PyTorch indexes the whole tensor (safetensors hands the key
          to torch): ints, slices with a positive step, `...`, None, lists, bools, with
          torch's own errors (checked first on a tensor of the same shape that holds one
          element, so they are torch's). Raw data of a mapped file is a view of the
          file's (copy-on-write) mapping, as safetensors' is; other data is read only
          for the rows the key needs where it starts with an int or a slice.
        - framework "np": as safetensors' own slicer: a slice, an int or `...`, or a
          tuple of them (one `...`); an empty list selects nothing. Slices take no
          negative bounds (OverflowError, as safetensors) and positive steps only; a
          start at or past the end of its dimension, a stop past it, an int out of
          range, None, a non-empty list and anything else raise SafetensorError. One
          case safetensors fails by a bug of its own (a stop before the start: a
          SystemError) gives an empty selection, as NumPy does. The result is an array
          of its own.
        """
        if self._framework == "np":
            return self._read_np(_safetensors_key(key, tuple(self._obj.shape)))
        return self._read_pt(key)

    # --- NumPy: safetensors' slicer --------------------------------------------------------
    def _read_np(self, dims):
        """The values selected by `dims` (per dimension: an int, or a slice with absolute
        start and stop and a positive step) as a new array."""
        shape = tuple(self._obj.shape)
        if not shape:
            return np.array(self._values(0, 1).reshape(()))
        if not dims:
            dims = [slice(0, shape[0], 1)]
        first = dims[0]
        if isinstance(first, int):
            lo, hi, local = first, first + 1, 0
        else:
            lo, hi = first.start, max(first.start, first.stop)
            local = slice(0, hi - lo, first.step)
        return np.array(self._rows(lo, hi)[(local,) + tuple(dims[1:])])

    def _rows(self, lo, hi):
        """Rows [lo, hi) of dimension 0, shaped (hi - lo,) + shape[1:], by a range read
        (a view of the mapping where the data is raw there)."""
        shape = tuple(self._obj.shape)
        if hi <= lo:
            return np.empty((0,) + shape[1:], self._value_dtype())
        row = 1
        for d in shape[1:]:
            row *= d
        return self._values(lo * row, (hi - lo) * row).reshape((hi - lo,) + shape[1:])

    # --- PyTorch: torch's indexing ---------------------------------------------------------
    def _read_pt(self, key):
        import torch

        from . import _torch

        shape = tuple(self._obj.shape)
        c = self._component
        if self._obj.format.startswith("ggml_"):
            dtype = torch.float32
        else:
            dtype = _torch.torch_dtype(c.dtype, c.type) or torch.uint8
        # torch's own checks and errors, on a tensor of the shape that holds one element
        # (the "meta" device can't take a bool mask)
        torch.zeros((), dtype=dtype).expand(shape)[key]
        h = self._h
        if (self._obj.format == "dense" and h.views and c.encoding == lib.ZT_ENCODING_RAW
                and self._storages is not None):
            whole = _torch.load(h, [self._obj.name], "cpu", storages=self._storages)[self._obj.name]
            t = whole[key]  # a view of the file's copy-on-write mapping, as safetensors' is
        else:
            rows = _leading_rows(key, shape)
            if rows is None:
                whole = self._rows(0, shape[0]) if shape else np.array(self._values(0, 1).reshape(()))
                t = _torch.from_numpy(whole)[key]
            else:
                (lo, hi), local = rows
                t = _torch.from_numpy(self._rows(lo, hi))[local]
        return t if self._device == "cpu" else t.to(self._device)

    def _value_dtype(self):
        if self._obj.format.startswith("ggml_"):
            return np.dtype(np.float32)
        return _dtypes.numpy_dtype(self._component.dtype, self._component.type)[0]

    def _values(self, first, count):
        """Values [first, first + count) of the flattened tensor, read by a range read."""
        h, obj, c = self._h, self._obj, self._component
        if obj.format.startswith("ggml_"):
            q = ffi.new("zt_quant_info *")
            _lib.check(lib.zt_object_get_quant_info(h.ptr, obj.index, q))
            b = q.block_size
            lo = first - first % b
            hi = min(-(-(first + count) // b) * b, _numel(obj.shape))
            out = np.empty(hi - lo, np.float32)
            if hi > lo:
                dst = ffi.from_buffer(out, require_writable=True)
                _lib.check(lib.zt_component_read_as_range(h.ptr, obj.index, b"data", _dtypes.F32, lo,
                                                        dst, len(dst)))
            return out[first - lo:first - lo + count]
        np_dtype, _per = _dtypes.numpy_dtype(c.dtype, c.type)
        if c.type in _dtypes.PACKED:
            raise ValueError(f"'{obj.name}' holds packed {c.type} values: read it whole")
        if h.views and c.encoding == lib.ZT_ENCODING_RAW:  # a view: only the pages touched are read
            address, size, _d, _z = h.view(obj.index, c)
            buffer, offset = h.memory(address, size, obj.index, c.index)
            return np.frombuffer(buffer, np_dtype, count, offset + first * np_dtype.itemsize)
        out = np.empty(count, np_dtype)
        if count:
            dst = ffi.from_buffer(out, require_writable=True)
            _lib.check(lib.zt_component_read_range(h.ptr, obj.index, b"data", first * np_dtype.itemsize,
                                                 dst, len(dst)))
        return out


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _is_int(k):
    """An index safetensors' slicer takes as an int: an int (bool included) or anything
    with __index__, but not NumPy's bool."""
    if isinstance(k, int):
        return True
    return not isinstance(k, (np.bool_, np.ndarray)) and hasattr(type(k), "__index__")


def _safetensors_key(key, shape):
    """`key` as safetensors' NumPy slicer reads it: per dimension an int (made
    non-negative) or a slice(start, stop, step) with absolute bounds; dimensions past the
    key's are left whole."""
    ndim = len(shape)
    if isinstance(key, list):
        if key:
            raise SafetensorError("Non empty lists are not implemented")
        items = [slice(0, 0)]  # an empty list selects nothing of dimension 0
    else:
        items = list(key) if isinstance(key, tuple) else [key]
    parsed = []
    for at, k in enumerate(items):
        if k is Ellipsis or isinstance(k, slice):
            parsed.append(k)
        elif _is_int(k):
            parsed.append(int(k))
        else:
            raise SafetensorError(f"Unsupported slice index at position {at}: expected slice, int, or ellipsis")
    ellipses = sum(k is Ellipsis for k in parsed)
    if ellipses > 1:
        raise SafetensorError("Only one ellipsis (...) is allowed in slice index")
    for k in parsed:
        if isinstance(k, slice):
            for bound in (k.start, k.stop):
                if bound is not None and not _is_int(bound):
                    raise TypeError(f"slice bounds are ints or None, not {type(bound).__name__}")
                if bound is not None and int(bound) < 0:
                    raise OverflowError("can't convert negative int to unsigned")
            if k.step is not None and (not _is_int(k.step) or int(k.step) <= 0):
                raise SafetensorError(f"Slice step must be a positive integer, got {k.step}")
    if ellipses:
        at = parsed.index(Ellipsis)
        parsed[at:at + 1] = [slice(None)] * max(0, ndim - len(parsed) + 1)
    if len(parsed) > ndim:
        raise SafetensorError(f"Error during slicing {_shown(parsed)} with shape {list(shape)}: "
                              "more slicing indexes than dimensions in tensor")
    dims = []
    for d, (k, size) in enumerate(zip(parsed, shape)):
        if isinstance(k, int):
            i = k + size if k < 0 else k
            if i < 0:
                raise SafetensorError(f"Invalid index {k} for dimension {d} of size {size}")
            if i >= size:
                raise SafetensorError(f"Error during slicing {_shown(parsed)} with shape {list(shape)}: "
                                      f"index {i} out of bounds for tensor dimension #{d} of size {size}")
            dims.append(i)
            continue
        start = 0 if k.start is None else int(k.start)
        stop = size if k.stop is None else int(k.stop)
        if start >= size or stop > size:
            bad = start if start >= size else stop - 1
            raise SafetensorError(f"Error during slicing {_shown(parsed)} with shape {list(shape)}: "
                                  f"index {bad} out of bounds for tensor dimension #{d} of size {size}")
        dims.append(slice(start, stop, 1 if k.step is None else int(k.step)))
    return dims


def _shown(parsed):
    """A key as safetensors' messages write it: [0, 1:3, ::2]."""
    def one(k):
        if not isinstance(k, slice):
            return str(k)
        text = ("" if k.start is None else str(k.start)) + ":" + ("" if k.stop is None else str(k.stop))
        return text + ("" if k.step in (None, 1) else f":{k.step}")

    return "[" + ", ".join(one(k) for k in parsed) + "]"


def _leading_rows(key, shape):
    """((lo, hi), the key for rows lo..hi - 1) when a torch index `key` (already checked
    by torch) holds only ints and slices (and a ... after the first), so that only rows
    lo..hi - 1 of dimension 0 need reading; else None."""
    items = key if isinstance(key, tuple) else (key,)
    if not shape or not items:
        return None
    for k in items:
        if not (isinstance(k, slice) or k is Ellipsis or (isinstance(k, int) and not isinstance(k, bool))):
            return None
    first = items[0]
    if first is Ellipsis:
        return None
    size = shape[0]
    if isinstance(first, int):
        i = first + size if first < 0 else first
        return (i, i + 1), (0,) + tuple(items[1:])
    rows = range(*first.indices(size))
    if not rows:
        return (0, 0), (slice(0, 0),) + tuple(items[1:])
    return (rows[0], rows[-1] + 1), (slice(0, rows[-1] + 1 - rows[0], rows.step),) + tuple(items[1:])
