"""The 2.x package's `ztensor.numpy`: a safetensors-shaped layer over the 2.x API.
save_file writes zTensor v2 (canonical); load_file returns arrays of every dense tensor
with its shape (bf16 and fp8 as ml_dtypes' types where installed)."""

from .. import numpy as _st_numpy
from . import Writer

__all__ = ["save_file", "load_file"]


def save_file(tensors, filename, metadata=None):
    """Writes {name: array} as a canonical zTensor v2 file; `metadata` its attributes."""
    _st_numpy._check(tensors)
    with Writer(filename) as w:
        for name, value in tensors.items():
            w.add(name, value)
        if metadata:
            w.set_attributes(metadata)


def load_file(filename):
    """{name: array} of every tensor of a file (any format the library reads)."""
    return _st_numpy.load_file(filename)
