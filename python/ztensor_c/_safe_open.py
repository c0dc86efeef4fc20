"""safe_open: safetensors' lazy reader API, for every format the library reads."""

import numpy as np

from . import _dtypes, _lib
from ._handle import Handle
from ._lib import ffi, lib

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

    Any file the library reads works (zTensor, safetensors, GGUF, Tensogram, sets by
    index.json, URLs). framework "np" gives NumPy arrays (read-only views of the mapping
    for raw data), "pt" torch tensors on `device` ("cpu", "cuda:0", an int ...).
    """

    def __init__(self, filename, framework, device="cpu"):
        self._framework = _framework(framework)
        if self._framework == "pt":
            import torch  # noqa: F401  (fail now, not on the first tensor)

            from . import _torch

            self._storages = _torch._Storages()
        self._device = _device(device)
        self._h = Handle.open(filename)

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
        """The file's attributes ({str: value}; a safetensors file's __metadata__ is
        {str: str}), or None when it has none."""
        attributes = self._handle().attributes()
        return attributes or None

    def get_tensor(self, name):
        h = self._handle()
        if self._framework == "np":
            return h.value(h.index_of(name))
        from . import _torch

        return _torch.load(h, [name], self._device, storages=self._storages)[name]

    def get_slice(self, name):
        h = self._handle()
        return _Slice(h, h.object(h.index_of(name)), self._framework, self._device)

    def close(self):
        self._h = None
        self._storages = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _device(device):
    if isinstance(device, int):
        return f"cuda:{device}"
    return str(device)


class _Slice:
    """A tensor not read yet: its shape and dtype, and `[...]` reading only the rows an
    index selects (a range read: for compressed data only the zstd frames holding them
    are decoded; for GGUF quantized data only their blocks are dequantized)."""

    def __init__(self, handle, obj, framework, device):
        self._h = handle
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
        arr = self._read(key)
        if self._framework == "np":
            return arr
        from . import _torch

        t = _torch.from_numpy(arr)
        return t if self._device == "cpu" else t.to(self._device)

    def _read(self, key):
        shape = tuple(self._obj.shape)
        key = _normalize(key, len(shape))
        if not shape:
            return np.array(self._values(0, 1).reshape(()))
        first, rest = key[0], key[1:]
        if isinstance(first, slice):
            rows = range(*first.indices(shape[0]))
            if not rows:
                return np.empty((0,) + shape[1:], self._value_dtype())[(slice(None),) + rest]
            lo, hi = min(rows[0], rows[-1]), max(rows[0], rows[-1]) + 1
            stop = rows[-1] - lo + (1 if rows.step > 0 else -1)
            local = slice(rows[0] - lo, stop if stop >= 0 else None, rows.step)
        else:
            if not -shape[0] <= first < shape[0]:
                raise IndexError(f"index {first} is out of bounds for dimension 0 of size {shape[0]}")
            lo = first % shape[0]
            hi = lo + 1
            local = 0
        row = 1
        for d in shape[1:]:
            row *= d
        block = self._values(lo * row, (hi - lo) * row).reshape((hi - lo,) + shape[1:])
        return np.array(block[(local,) + rest])

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


def _normalize(key, ndim):
    """The index as a tuple of one slice or int per dimension (Ellipsis expanded)."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is None for k in key) or any(isinstance(k, (list, np.ndarray)) for k in key):
        raise TypeError("slices, integers and ... only (no None, lists or arrays)")
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (ndim - len(key) + 1) + key[at + 1:]
    if len(key) > ndim:
        raise IndexError(f"too many indices: the tensor has {ndim} dimension(s), {len(key)} given")
    for k in key:
        if not isinstance(k, (slice, int, np.integer)):
            raise TypeError(f"unsupported index {k!r}")
    key = tuple(int(k) if isinstance(k, np.integer) else k for k in key)
    return key + (slice(None),) * (ndim - len(key))
