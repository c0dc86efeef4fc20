"""The 1.x package's `ztensor.numpy`: save_file / save write zTensor (raw, or zstd with
`compression`), load_file / load read any format the library reads."""

from .. import numpy as _st_numpy
from .._writer import Writer, check_metadata

__all__ = ["save_file", "save", "load_file", "load"]


def _compress(compression):
    if compression is True:
        return True
    if compression in (False, None, 0):
        return None
    if isinstance(compression, int) and compression > 0:
        return compression
    raise ValueError(f"compression is False, True or a zstd level > 0, not {compression!r}")


def save_file(tensors, filename, metadata=None, compression=False):
    """Writes {name: array} as a zTensor file; `compression` False (raw), True (zstd
    level 3) or a zstd level; `metadata` ({str: str}) becomes the file's attributes."""
    _st_numpy._check(tensors)
    check_metadata(metadata)
    compress = _compress(compression)
    with Writer(filename) as w:
        for name, value in tensors.items():
            w.add(name, value, compress=compress)
        if metadata:
            w.set_attributes(metadata)


def save(tensors, metadata=None, compression=False):
    """The bytes of the zTensor file save_file would write."""
    import os
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".zt")
    os.close(fd)
    try:
        save_file(tensors, path, metadata, compression)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


def load_file(filename, copy=False):
    """{name: array} of a file: views of its copy-on-write mapping (writable; a write
    changes only this process's pages), or arrays of their own with copy=True."""
    return _st_numpy.load_file(filename, copy=copy)


def load(data):
    """{name: array} of a file's bytes."""
    return _st_numpy.load(data)
