"""safetensors.numpy's API over ztensor_c: load_file, save_file, load, save.

    from ztensor_c.numpy import load_file, save_file

    save_file({"w": np.ones((2, 3), np.float32)}, "model.zt", metadata={"step": "3"})
    tensors = load_file("model.safetensors")   # any readable format

`load_file` and `load` return arrays that are read-only views of the file's mapping (or
of the loaded bytes) where the data is stored raw: nothing is copied, and the file stays
mapped while any of them is alive. Compressed tensors are decoded into arrays of their
own, in one parallel batch. `copy=True` gives writable arrays of their own for all.
Objects that are not dense come back as load_file's other values do: GGUF block-quantized
tensors dequantized to float32, sparse ones as SciPy arrays (or tuples without SciPy).
"""

import os
import tempfile

import numpy as np

from ._handle import Handle
from ._lib import SafetensorError  # noqa: F401  (the names safetensors.numpy has too)
from ._safe_open import safe_open  # noqa: F401
from ._serialize import TensorSpec, deserialize, serialize, serialize_file  # noqa: F401
from ._writer import Writer, check_metadata  # noqa: F401  (Writer: the reference's name)
from ._writer import write_dict as _write

__all__ = ["load_file", "save_file", "load", "save"]


def load_file(filename, *, copy=False):
    """{name: array} of every tensor of a file (any format the library reads, or a URL).
    copy=True reads the file with pread, not through a mapping: the arrays are the only
    memory the load leaves (a mapping's pages would count in the process's RSS too)."""
    return Handle.open(filename, mmap=not copy).load_dense(copy=copy)


def load(data, *, copy=False):
    """{name: array} of every tensor of a file's bytes."""
    return Handle.open_memory(data).load_dense(copy=copy)


def _check(tensors):
    if not isinstance(tensors, dict):
        raise ValueError(f"expected a dict of [str, np.ndarray], got {type(tensors).__name__}")
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise ValueError(f"key {name!r} is not a str")
        if not isinstance(value, np.ndarray):
            raise ValueError(f"key `{name}` is invalid: expected np.ndarray, got {type(value).__name__}")


def save_file(tensors, filename, metadata=None, *, compress=None, checksum="none"):
    """Writes {name: array} as safetensors.numpy.save_file does: a safetensors file, byte
    for byte safetensors' own, whatever the extension; with `compress` (True or a zstd
    level) or `checksum` ("xxh3" or "sha256"), ours, a zTensor file, which holds them.
    `metadata`: {str: str}."""
    _check(tensors)
    check_metadata(metadata)
    _write(tensors, filename, metadata, compress, checksum)


def save(tensors, metadata=None, *, compress=None, checksum="none"):
    """The bytes of the file save_file would write."""
    _check(tensors)
    check_metadata(metadata)
    fd, path = tempfile.mkstemp()
    os.close(fd)
    try:
        _write(tensors, path, metadata, compress, checksum, sync=False)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)
