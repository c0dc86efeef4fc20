"""Storage dtypes and logical types, as NumPy, DLPack, safetensors and PyTorch know them.

A component is stored as one of 13 dtypes (the C API's zt_dtype values); a logical type
("f8_e4m3fn", "complex64" ...) may say what its bytes mean. NumPy has no bfloat16 or fp8
of its own: with ml_dtypes installed those are ml_dtypes' types; without it they are a
structured dtype of one field named after the type, holding the stored integers
(`dtype([('bf16', '<u2')])`), so the bytes are there but can't be mistaken for integers.
"""

import sys

import numpy as np

# Optional: bf16 and fp8 as NumPy dtypes. ml_dtypes is imported on first need (its import
# costs most of a second), never by `import ztensor_c`: _UNSET until then, None when it
# is not installed.
_UNSET = object()
_ml_dtypes = _UNSET


def _ml():
    """The ml_dtypes module (imported now if it wasn't), or None without it."""
    global _ml_dtypes
    m = _ml_dtypes
    if m is _UNSET:
        try:
            import ml_dtypes as m
        except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
            m = None
        _ml_dtypes = m
    return m


def _ml_loaded():
    """ml_dtypes when something imported it (a dtype of its types exists), else None:
    recognising a dtype never imports it."""
    m = _ml_dtypes
    return sys.modules.get("ml_dtypes") if m is _UNSET else m

# zt_dtype values
F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL = range(13)

NAMES = ("f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "bool")
SIZES = (8, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1, 1)
# The reference package's spelling (TensorMetadata.dtype), which is NumPy's
LONG_NAMES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
              "uint64", "uint32", "uint16", "uint8", "bool")
# NumPy dtypes of the storage dtypes numpy has (bf16: see numpy_dtype)
_PLAIN = {F64: "<f8", F32: "<f4", F16: "<f2", I64: "<i8", I32: "<i4", I16: "<i2", I8: "i1",
          U64: "<u8", U32: "<u4", U16: "<u2", U8: "u1", BOOL: "?"}
STORAGE_NUMPY = {k: np.dtype(v) for k, v in _PLAIN.items()}
STORAGE_NUMPY[BF16] = np.dtype("<u2")  # the bits, for arithmetic-free paths

# Logical types: (storage dtype, ml_dtypes name, DLPack (code, bits), safetensors name,
# torch attribute). Values per storage element are 1 unless listed in PACKED.
LOGICAL = {
    "f8_e4m3fn": (U8, "float8_e4m3fn", (10, 8), "F8_E4M3", "float8_e4m3fn"),
    "f8_e5m2": (U8, "float8_e5m2", (12, 8), "F8_E5M2", "float8_e5m2"),
    "f8_e4m3fnuz": (U8, "float8_e4m3fnuz", (11, 8), "F8_E4M3FNUZ", "float8_e4m3fnuz"),
    "f8_e5m2fnuz": (U8, "float8_e5m2fnuz", (13, 8), "F8_E5M2FNUZ", "float8_e5m2fnuz"),
    "f8_e8m0fnu": (U8, "float8_e8m0fnu", (14, 8), "F8_E8M0", "float8_e8m0fnu"),
    "complex64": (F32, None, (5, 64), "C64", "complex64"),
    "complex128": (F64, None, (5, 128), None, "complex128"),
    # packed sub-byte floats: no NumPy dtype holds them packed; DLPack does
    "f4_e2m1fn_x2": (U8, None, (17, 4), "F4", None),
    "f6_e2m3fn_x4": (U8, None, (15, 6), "F6_E2M3", None),
    "f6_e3m2fn_x4": (U8, None, (16, 6), "F6_E3M2", None),
}
# zTensor v2's names of the same types (its registry, spec appendix A), as its files name them
LOGICAL["f8_e8m0"] = LOGICAL["f8_e8m0fnu"]
LOGICAL["f4_e2m1"] = LOGICAL["f4_e2m1fn_x2"]
PACKED = {"f4_e2m1fn_x2", "f6_e2m3fn_x4", "f6_e3m2fn_x4", "f4_e2m1"}

# DLPack type codes (dlpack.h DLDataTypeCode)
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_COMPLEX, DL_BOOL = 0, 1, 2, 4, 5, 6
DLPACK = {F64: (DL_FLOAT, 64), F32: (DL_FLOAT, 32), F16: (DL_FLOAT, 16), BF16: (DL_BFLOAT, 16),
          I64: (DL_INT, 64), I32: (DL_INT, 32), I16: (DL_INT, 16), I8: (DL_INT, 8),
          U64: (DL_UINT, 64), U32: (DL_UINT, 32), U16: (DL_UINT, 16), U8: (DL_UINT, 8),
          BOOL: (DL_BOOL, 8)}

# safetensors' dtype names (safe_open's get_slice(...).get_dtype())
SAFETENSORS = {F64: "F64", F32: "F32", F16: "F16", BF16: "BF16", I64: "I64", I32: "I32",
               I16: "I16", I8: "I8", U64: "U64", U32: "U32", U16: "U16", U8: "U8", BOOL: "BOOL"}

TORCH = {F64: "float64", F32: "float32", F16: "float16", BF16: "bfloat16", I64: "int64",
         I32: "int32", I16: "int16", I8: "int8", U64: "uint64", U32: "uint32", U16: "uint16",
         U8: "uint8", BOOL: "bool"}


def _raw_structured(name, storage):
    return np.dtype([(name, STORAGE_NUMPY[storage])])


def numpy_dtype(dtype, logical=None):
    """The NumPy dtype of one stored element, and how many stored elements make one value
    (2 for complex: the trailing pair becomes one complex value; 1 otherwise).

    Returns (numpy dtype, elements per value). Packed sub-byte types come back as their
    bytes (a structured dtype named after the type), one per stored byte.
    """
    if logical is not None:
        spec = LOGICAL.get(logical)
        if spec is not None and spec[0] == dtype:
            if logical == "complex64":
                return np.dtype("<c8"), 2
            if logical == "complex128":
                return np.dtype("<c16"), 2
            ml = _ml() if spec[1] is not None else None
            if ml is not None and hasattr(ml, spec[1]):
                return np.dtype(getattr(ml, spec[1])), 1
            return _raw_structured(logical, dtype), 1
        # a logical type this package doesn't know (e.g. ggml_q4_k blocks): the storage
    if dtype == BF16:
        ml = _ml()
        if ml is not None:
            return np.dtype(ml.bfloat16), 1
        return _raw_structured("bf16", BF16), 1
    try:
        return STORAGE_NUMPY[dtype], 1
    except KeyError:
        raise ValueError(f"unknown dtype value {dtype}") from None


# from_numpy's answers by dtype (a save_file of 50,000 tensors asks for each): only
# answers found are kept, since one refused now may be known once ml_dtypes is imported.
_FROM_NUMPY = {}


def from_numpy(dt):
    """(zt dtype, logical type or None) of a NumPy dtype, for writing."""
    dt = np.dtype(dt)
    found = _FROM_NUMPY.get(dt)
    if found is None:
        found = _FROM_NUMPY[dt] = _from_numpy(dt)
    return found


def _from_numpy(dt):
    if dt.names is not None and len(dt.names) == 1:
        # one of our own structured raw dtypes: written back as the type it names
        name = dt.names[0]
        if name == "bf16":
            return BF16, None
        if name in LOGICAL:
            return LOGICAL[name][0], name
    if dt.kind == "c":
        if dt == np.dtype("<c8"):
            return F32, "complex64"
        if dt == np.dtype("<c16"):
            return F64, "complex128"
    for code, plain in STORAGE_NUMPY.items():
        if code != BF16 and dt == plain:
            return code, None
    ml = _ml_loaded()
    if ml is not None:
        if dt == np.dtype(ml.bfloat16):
            return BF16, None
        for logical, spec in LOGICAL.items():
            if spec[1] is not None and hasattr(ml, spec[1]) and dt == np.dtype(getattr(ml, spec[1])):
                return spec[0], logical
    raise ValueError(f"no zTensor dtype for NumPy dtype {dt} (little-endian numbers, bool, "
                     "complex, and ml_dtypes' bfloat16 and float8 types are written)")
