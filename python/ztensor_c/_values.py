"""Typed attribute values (the C API's zt_value) as Python values.

- null: None; bool: bool; every integer width: int; f32 and f64: float
- string: str (a GGUF string that is not UTF-8 keeps its bytes: decoded with
  surrogateescape, so `s.encode("utf-8", "surrogateescape")` gives them back)
- bytes: bytes; map: dict (in file order; keys as values, so mostly str)
- array of one numeric type or of bools: a NumPy array of that dtype (a copy: the
  152,000 scores of a vocabulary are one array, not a list of floats); any other array:
  a list
- anything without a typed equivalent (a CBOR simple value, an integer below -2**63):
  an `OtherValue`
"""

import numpy as np

from . import _lib
from ._lib import ffi, lib

# zt_value_type values (stable)
NULL, BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64, STRING, BYTES, ARRAY, MAP, OTHER = range(17)
MIXED = 17  # zt_value_get_array_type of an array whose elements differ

_ARRAY_DTYPES = {BOOL: np.dtype("?"), I8: np.dtype("i1"), I16: np.dtype("<i2"), I32: np.dtype("<i4"),
                 I64: np.dtype("<i8"), U8: np.dtype("u1"), U16: np.dtype("<u2"), U32: np.dtype("<u4"),
                 U64: np.dtype("<u8"), F32: np.dtype("<f4"), F64: np.dtype("<f8")}
_SIGNED = {I8, I16, I32, I64}
_UNSIGNED = {U8, U16, U32, U64}


class OtherValue:
    """An attribute value with no Python equivalent the C API can give (a CBOR simple
    value, or an integer below -2**63); `attributes_json` has its text."""

    __slots__ = ()

    def __repr__(self):
        return "<ztensor_c.OtherValue>"


class _Scratch:
    """Out-parameters reused by one conversion (cffi allocations cost more than calls)."""

    def __init__(self):
        self.u32 = ffi.new("uint32_t *")
        self.u64 = ffi.new("uint64_t *")
        self.i64 = ffi.new("int64_t *")
        self.f64 = ffi.new("double *")
        self.bool = ffi.new("bool *")
        self.size = ffi.new("size_t *")
        self.text = ffi.new("const char **")
        self.data = ffi.new("const void **")
        self.bytes = ffi.new("const uint8_t **")
        self.value = ffi.new("const zt_value **")
        self.key = ffi.new("const zt_value **")


def _string(ptr, n):
    return ffi.unpack(ptr, n).decode("utf-8", "surrogateescape")


def convert(value, scratch=None):
    """The Python value of a `const zt_value *`."""
    s = scratch or _Scratch()
    _lib.check(lib.zt_value_get_type(value, s.u32))
    t = s.u32[0]
    if t in _SIGNED:
        _lib.check(lib.zt_value_get_i64(value, s.i64))
        return s.i64[0]
    if t in _UNSIGNED:
        _lib.check(lib.zt_value_get_u64(value, s.u64))
        return s.u64[0]
    if t == STRING:
        _lib.check(lib.zt_value_get_string(value, s.text, s.size))
        return _string(s.text[0], s.size[0])
    if t in (F32, F64):
        _lib.check(lib.zt_value_get_f64(value, s.f64))
        return s.f64[0]
    if t == BOOL:
        _lib.check(lib.zt_value_get_bool(value, s.bool))
        return bool(s.bool[0])
    if t == NULL:
        return None
    if t == BYTES:
        _lib.check(lib.zt_value_get_bytes(value, s.bytes, s.size))
        return ffi.unpack(ffi.cast("const char *", s.bytes[0]), s.size[0])
    if t == MAP:
        return _map(value, s)
    if t == ARRAY:
        return _array(value, s)
    return OtherValue()


def _map(value, s):
    _lib.check(lib.zt_value_get_count(value, s.size))
    out = {}
    for i in range(s.size[0]):
        _lib.check(lib.zt_value_get_entry(value, i, s.key, s.value))
        key, item = s.key[0], s.value[0]
        k = convert(key, s)
        if isinstance(k, (list, dict, np.ndarray)):
            k = repr(k)  # unhashable keys (CBOR allows them) by their text
        out[k] = convert(item, s)
    return out


def _array(value, s):
    _lib.check(lib.zt_value_get_count(value, s.size))
    n = s.size[0]
    _lib.check(lib.zt_value_get_array_type(value, s.u32))
    element = s.u32[0]
    dtype = _ARRAY_DTYPES.get(element)
    if dtype is not None and lib.zt_value_get_array_data(value, s.data, s.size) == lib.ZT_OK:
        count = s.size[0]
        if count == 0:
            return np.empty(0, dtype)
        raw = ffi.buffer(ffi.cast("const char *", s.data[0]), count * dtype.itemsize)
        return np.frombuffer(raw, dtype=dtype).copy()
    if element == STRING:
        out = []
        get = lib.zt_value_get_element_string
        for i in range(n):
            _lib.check(get(value, i, s.text, s.size))
            out.append(_string(s.text[0], s.size[0]))
        return out
    out = []
    for i in range(n):
        _lib.check(lib.zt_value_get_element(value, i, s.value))
        out.append(convert(s.value[0], s))
    return out
