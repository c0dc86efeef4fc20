"""Tensor: one component of one object, exported to NumPy, PyTorch and others by DLPack."""

import numpy as np

from . import _dlpack, _dtypes
from ._lib import lib

_RAW = lib.ZT_ENCODING_RAW


class Tensor:
    """One component of an object of an open file, by reference.

    `np.from_dlpack(t)`, `torch.from_dlpack(t)` (and any DLPack consumer) get its memory
    without a copy: for a raw component of a mapped file the file's mapping itself
    (copy-on-write: writable, a write changes only this process's pages, never the
    file), else a decoded copy this Tensor keeps (made once, on first use). The memory
    stays valid while anything made from it is alive, whether or not the reader was
    closed. `t.numpy()` is the same memory as a NumPy array.

    The shape is the object's shape when the component holds its values (the `data` of a
    dense object), else the component's own element count (sparse parts, GGUF blocks).
    """

    __slots__ = ("_handle", "_object", "_component", "_array")

    def __init__(self, handle, obj, component):
        self._handle = handle
        self._object = obj
        self._component = component
        self._array = None

    # --- what it is --------------------------------------------------------------------
    @property
    def name(self):
        return self._object.name

    @property
    def role(self):
        return self._component.role

    @property
    def format(self):
        return self._object.format

    @property
    def dtype(self):
        """The NumPy dtype of the values (ml_dtypes' for bf16/fp8 when installed)."""
        return _dtypes.numpy_dtype(self._component.dtype, self._component.type)[0]

    @property
    def storage_dtype(self):
        """The stored dtype as the format spells it: "f32", "bf16", "u8" ..."""
        return _dtypes.NAMES[self._component.dtype]

    @property
    def logical_type(self):
        """The logical type ("f8_e4m3fn", "complex64", "ggml_q4_k" ...) or None."""
        return self._component.type

    @property
    def shape(self):
        c = self._component
        if c.type in _dtypes.PACKED and c.role == "data":
            return tuple(self._object.shape)
        np_dtype = self.dtype
        count = c.decoded_length // np_dtype.itemsize
        n = 1
        for d in self._object.shape:
            n *= d
        return tuple(self._object.shape) if n == count else (count,)

    @property
    def nbytes(self):
        return self._component.decoded_length

    @property
    def encoding(self):
        return ("raw", "zstd", "pipeline")[self._component.encoding]

    @property
    def zero_copy(self):
        """Whether the memory is the file's mapping itself (no copy was ever made)."""
        return self._view()[1]

    # --- memory ------------------------------------------------------------------------
    def _view(self):
        """(uint8 array of the component's bytes, whether it is the file's mapping)."""
        if self._array is None:
            h, c = self._handle, self._component
            if h.views and c.encoding == _RAW:
                address, size, _dtype, zero_copy = h.view(self._object.index, c)
                buffer, offset = h.memory(address, size, self._object.index, c.index)
                raw = np.frombuffer(buffer, np.uint8, size, offset)
            else:  # decoded straight into memory of its own (the library keeps no copy)
                raw, zero_copy = np.empty(c.decoded_length, np.uint8), False
                h.read_into(self._object.index, c, raw)
            self._array = (raw, zero_copy)
        return self._array

    def numpy(self):
        """A NumPy array over the component's memory (no copy)."""
        raw = self._view()[0]
        c = self._component
        np_dtype = self.dtype
        shape = self.shape if c.type not in _dtypes.PACKED else (c.decoded_length,)
        return raw.view(np_dtype).reshape(shape)

    def tobytes(self):
        return self._view()[0].tobytes()

    def __array__(self, dtype=None, copy=None):
        if copy is False and dtype is not None and np.dtype(dtype) != self.dtype:
            raise ValueError("a dtype conversion needs a copy")
        arr = self.numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    # --- DLPack --------------------------------------------------------------------------
    def __dlpack_device__(self):
        return (_dlpack.KDL_CPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if stream is not None and stream != -1:
            raise BufferError("a CPU tensor takes no stream (stream must be None)")
        if dl_device is not None and tuple(dl_device) != (_dlpack.KDL_CPU, 0):
            raise BufferError(f"this tensor is in CPU memory and can't be exported to device {dl_device}")
        c = self._component
        if c.type in _dtypes.LOGICAL and _dtypes.LOGICAL[c.type][0] == c.dtype:
            code, bits = _dtypes.LOGICAL[c.type][2]
        else:
            code, bits = _dtypes.DLPACK[c.dtype]
        if c.type in _dtypes.PACKED and c.role != "data":
            code, bits = _dtypes.DLPACK[c.dtype]
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        raw = self._view()[0]
        owner = raw.copy() if copy else raw
        return _dlpack.capsule(owner.ctypes.data, self.shape, code, bits, owner,
                               read_only=not owner.flags.writeable, copied=bool(copy),
                               versioned=versioned)

    def __repr__(self):
        logical = f", type={self.logical_type}" if self.logical_type else ""
        return (f"<ztensor_c.Tensor '{self.name}' {self.role} shape={list(self.shape)} "
                f"dtype={self.storage_dtype}{logical} {self.encoding}>")
