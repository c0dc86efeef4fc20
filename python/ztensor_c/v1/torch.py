"""The 1.x package's `ztensor.torch`: save_file / save / save_model write zTensor (raw, or
zstd with `compression`), load_file / load / load_model read any format the library
reads."""

from .. import torch as _st_torch
from .._writer import Writer, check_metadata
from .numpy import _compress

__all__ = ["save_file", "save", "load_file", "load", "save_model", "load_model"]


def _write(tensors, filename, metadata, compression, sync=True):
    compress = _compress(compression)
    with Writer(filename, sync=sync) as w:
        for name, value in tensors.items():
            w.add(name, value, compress=compress)
        if metadata:
            w.set_attributes(metadata)


def save_file(tensors, filename, metadata=None, compression=False):
    """Writes {name: tensor} as a zTensor file (tensors on any device; tensors sharing
    memory are refused with a ValueError, as the 1.x package does: see save_model)."""
    _st_torch._check(tensors, ValueError)
    check_metadata(metadata)
    _write(tensors, filename, metadata, compression)


def save(tensors, metadata=None, compression=False):
    """The bytes of the zTensor file save_file would write."""
    import os
    import tempfile

    _st_torch._check(tensors, ValueError)
    check_metadata(metadata)
    fd, path = tempfile.mkstemp(suffix=".zt")
    os.close(fd)
    try:
        _write(tensors, path, metadata, compression, sync=False)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


def load_file(filename, device="cpu"):
    """{name: tensor} of a file on `device`."""
    return _st_torch.load_file(filename, device=device)


def load(data):
    """{name: tensor} of a file's bytes."""
    return _st_torch.load(data)


def save_model(model, filename, metadata=None, force_contiguous=False, compression=False):
    """A module's state_dict as a zTensor file, each shared storage once (the names left
    out recorded in the metadata, and restored by load_model)."""
    state_dict, metadata = _st_torch._deduplicated(model, metadata, force_contiguous)
    try:
        save_file(state_dict, filename, metadata or None, compression)
    except ValueError as e:
        raise ValueError(f"{e} (or save_model(..., force_contiguous=True))") from None


def load_model(model, filename, strict=True, device="cpu"):
    """Loads a file into a module (tied weights restored); (missing, unexpected) names."""
    return _st_torch.load_model(model, filename, strict=strict, device=device)
