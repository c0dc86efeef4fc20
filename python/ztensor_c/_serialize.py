"""safetensors' low-level functions, as its top-level module has them: `serialize`,
`serialize_file`, `deserialize` and `TensorSpec` (what safetensors.torch builds, by
pointer, for each tensor it saves).

serialize and serialize_file write safetensors, through the library's safetensors
writer (byte for byte what safetensors writes); deserialize reads a file's bytes with
the library, whatever the format.
"""

import os
import tempfile

from . import _dtypes
from ._handle import Handle
from ._lib import SafetensorError, ffi
from ._writer import Writer, check_metadata

# safetensors' dtype names and torch's (what TensorSpec takes) -> (zt dtype, logical type)
_BY_NAME = {}
for _code, _name in _dtypes.TORCH.items():
    _BY_NAME[_name] = _BY_NAME[_dtypes.SAFETENSORS[_code]] = (_code, None)
for _logical, _spec in _dtypes.LOGICAL.items():
    if _spec[3] is not None:
        _BY_NAME[_spec[3]] = (_spec[0], _logical)
    if _spec[4] is not None:
        _BY_NAME[_spec[4]] = (_spec[0], _logical)
_BY_NAME["float4_e2m1fn_x2"] = (_dtypes.U8, "f4_e2m1fn_x2")

# the dtype names TensorSpec takes (torch's, as safetensors' TensorSpec), in the order its
# error lists them
_SPEC_NAMES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
               "float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz",
               "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "complex64")


def safetensors_dtype(code, logical):
    """safetensors' name of a stored dtype ("F32", "BF16", "F8_E4M3" ...)."""
    if logical is not None and logical in _dtypes.LOGICAL and _dtypes.LOGICAL[logical][3] is not None:
        return _dtypes.LOGICAL[logical][3]
    return _dtypes.SAFETENSORS[code]


class TensorSpec:
    """One tensor to serialize: its dtype (torch's name, "float32", as safetensors'
    TensorSpec takes it), shape, and where its bytes are (data_ptr, data_len): the caller keeps them
    alive until the call returns, as with safetensors."""

    __slots__ = ("dtype", "shape", "data_ptr", "data_len")

    def __init__(self, dtype, shape, data_ptr, data_len):
        if dtype not in _SPEC_NAMES:
            raise SafetensorError(f'Unknown dtype "{dtype}". Supported dtypes: ' + ", ".join(_SPEC_NAMES))
        self.dtype = safetensors_dtype(*_BY_NAME[dtype])
        self.shape = [int(d) for d in shape]
        self.data_ptr = int(data_ptr)
        self.data_len = int(data_len)

    def __repr__(self):
        return (f"TensorSpec(dtype='{self.dtype}', shape={self.shape}, data_ptr={self.data_ptr}, "
                f"data_len={self.data_len})")


def _parts(spec):
    """(zt dtype, logical, shape, bytes buffer) of a TensorSpec or of safetensors' older
    {"dtype", "shape", "data"} dict."""
    if isinstance(spec, dict):
        dtype, shape, data = spec["dtype"], spec["shape"], spec["data"]
    else:
        dtype, shape = spec.dtype, spec.shape
        data = ffi.buffer(ffi.cast("char *", spec.data_ptr), spec.data_len) if spec.data_len else b""
    if dtype not in _BY_NAME:
        raise SafetensorError(f'Unknown dtype "{dtype}"')
    code, logical = _BY_NAME[dtype]
    return code, logical, [int(d) for d in shape], data


def serialize_file(tensor_dict, filename, metadata=None):
    """Writes {name: TensorSpec} as a safetensors file (safetensors.serialize_file)."""
    check_metadata(metadata)
    with Writer(filename, format="safetensors") as w:
        for name, spec in tensor_dict.items():
            code, logical, shape, data = _parts(spec)
            w.add_bytes_declared(name, data, code, shape, logical)
        if metadata is not None:
            w.set_attributes(metadata)


def serialize(tensor_dict, metadata=None):
    """The bytes of the safetensors file serialize_file would write."""
    check_metadata(metadata)
    fd, path = tempfile.mkstemp(suffix=".safetensors")
    os.close(fd)
    try:
        with Writer(path, format="safetensors", sync=False) as w:
            for name, spec in tensor_dict.items():
                code, logical, shape, data = _parts(spec)
                w.add_bytes_declared(name, data, code, shape, logical)
            if metadata is not None:
                w.set_attributes(metadata)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


def deserialize(data):
    """[(name, {"dtype": safetensors' name, "shape": [..], "data": bytearray})] of every
    dense tensor of a file's bytes, sorted by name (safetensors.deserialize); any format
    the library reads."""
    h = Handle.open_memory(data)
    out = []
    for name in sorted(h.names()):
        index = h.index_of(name)
        obj = h.object(index)
        c = obj.component("data")
        raw = bytearray(c.decoded_length)
        if raw:
            h.read_into(index, c, raw)
        out.append((name, {"data": raw, "shape": list(obj.shape), "dtype": safetensors_dtype(c.dtype, c.type)}))
    return out
