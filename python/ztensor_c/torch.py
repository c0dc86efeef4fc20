"""safetensors.torch's API over ztensor_c: load_file, save_file, load, save, load_model,
save_model.

    from ztensor_c.torch import load_file, save_model

    tensors = load_file("model.safetensors", device="cpu")   # any readable format
    save_model(model, "model.zt")                            # shared tensors saved once

Raw tensors of a local file share its pages copy-on-write (no byte is read until used;
writing changes only this process's copy), as safetensors' are; compressed ones are
decoded into tensors of their own in one parallel batch.
"""

import os
import tempfile
from collections import defaultdict

import torch

from . import _torch
from ._handle import Handle
from ._lib import SafetensorError  # noqa: F401  (safetensors.torch has it too)
from ._safe_open import safe_open  # noqa: F401  (as safetensors.torch has it)
from ._serialize import TensorSpec, deserialize, serialize, serialize_file  # noqa: F401
from ._writer import Writer, check_metadata  # noqa: F401  (Writer: the reference's name)
from ._writer import write_dict as _write

__all__ = ["load_file", "save_file", "load", "save", "load_model", "save_model", "storage_ptr",
           "storage_size", "serialize", "serialize_file", "deserialize", "TensorSpec", "SafetensorError"]


def storage_ptr(tensor):
    """The address of the storage under `tensor` (0 for one without memory, on "meta"),
    as safetensors.torch.storage_ptr: tensors of one storage share it (transformers
    finds tied weights by it)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except (NotImplementedError, RuntimeError):
        return 0


def storage_size(tensor):
    """The size in bytes of the storage under `tensor`, as safetensors.torch.storage_size
    (the tensor's own size where the storage has none)."""
    try:
        return tensor.untyped_storage().nbytes()
    except (NotImplementedError, RuntimeError):
        return tensor.nelement() * tensor.element_size()


def load_file(filename, device="cpu", *, copy=False):
    """{name: tensor} of every tensor of a file, on `device` ("cpu", "cuda:0", an int).
    copy=True reads with pread into tensors of their own (no mapping's pages in RSS)."""
    h = Handle.open(filename, mmap=not copy)
    return _torch.load(h, None, _device(device), copy)


def load(data, device="cpu"):
    """{name: tensor} of every tensor of a file's bytes (tensors of their own)."""
    h = Handle.open_memory(data)
    return _torch.load(h, None, _device(device), copy=True)


def _device(device):
    return f"cuda:{device}" if isinstance(device, int) else str(device)


def _check(tensors, shared_error=RuntimeError):
    if not isinstance(tensors, dict):
        raise ValueError(f"expected a dict of [str, torch.Tensor], got {type(tensors).__name__}")
    sparse = []
    for name, value in tensors.items():
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"key `{name}` is invalid: expected torch.Tensor, got {type(value).__name__}")
        if value.layout != torch.strided:
            sparse.append(name)
    if sparse:
        raise ValueError(f"sparse tensors can't be saved this way: {', '.join(sparse)} "
                         "(convert them to SciPy and use ztensor_c.Writer, or to dense)")
    shared = [names for names in _shared_groups(tensors) if len(names) > 1]
    if shared:
        raise shared_error(
            f"Some tensors share memory: {shared}. Saving them would store the memory twice "
            "and load them back as separate tensors. Use save_model(), which saves each "
            "shared storage once.")
    for name, value in tensors.items():
        if not value.is_contiguous():
            raise ValueError(
                f"tensor `{name}` is not contiguous: save a contiguous copy "
                "(`.contiguous()`), or the full tensor it is a view of")


def save_file(tensors, filename, metadata=None, *, compress=None, checksum="none"):
    """Writes {name: tensor} as safetensors.torch.save_file does (tensors on any device;
    refused when two share memory, see save_model): a safetensors file, byte for byte
    safetensors' own, whatever the extension; with `compress` or `checksum` (ours) a
    zTensor file, which holds them."""
    _check(tensors)
    check_metadata(metadata)
    _write(tensors, filename, metadata, compress, checksum)


def save(tensors, metadata=None, *, compress=None, checksum="none"):
    """The bytes of the file save_file would write."""
    _check(tensors)
    check_metadata(metadata)
    fd, path = tempfile.mkstemp(suffix=".zt")
    os.close(fd)
    try:
        _write(tensors, path, metadata, compress, checksum, sync=False)
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


# --- shared storage, as safetensors handles it ------------------------------------------
def _storage(t):
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def _byte_range(t):
    start = t.data_ptr()
    return start, start + t.nelement() * t.element_size()


def _shared_groups(state_dict):
    """Groups of names whose tensors overlap in one storage: one set per group, sorted;
    names alone in their storage form groups of one."""
    by_storage = defaultdict(list)
    for name, t in state_dict.items():
        if t.device.type == "meta":
            continue
        ptr, size = _storage(t)
        if ptr == 0 or size == 0:
            continue
        by_storage[(t.device, ptr, size)].append(name)
    groups = []
    for names in by_storage.values():
        # tensors of one storage share memory only where their byte ranges overlap
        spans = sorted((_byte_range(state_dict[n]), n) for n in names)
        current, end = [], None
        for (lo, hi), name in spans:
            if current and lo < end:
                current.append(name)
                end = max(end, hi)
            else:
                if current:
                    groups.append(set(current))
                current, end = [name], hi
        if current:
            groups.append(set(current))
    return sorted(groups, key=lambda g: sorted(g))


def _covers_storage(t):
    ptr, size = _storage(t)
    return t.data_ptr() == ptr and t.nelement() * t.element_size() == size


def _duplicates(state_dict, preferred=()):
    """{kept name: [names dropped]} for every group of tensors sharing memory: the kept
    one covers the whole storage (preferring names in `preferred`, then the first)."""
    preferred = set(preferred)
    dropped = {}
    for group in _shared_groups(state_dict):
        if len(group) < 2:
            continue
        complete = sorted(n for n in group if _covers_storage(state_dict[n]))
        if not complete:
            raise RuntimeError(
                f"tensors {sorted(group)} share memory, but none covers the whole storage: "
                "refusing to save or load them (that could store much more than they hold)")
        keep = next((n for n in complete if n in preferred), complete[0])
        dropped[keep] = sorted(n for n in group if n != keep)
    return dropped


def _deduplicated(model, metadata, force_contiguous):
    """(state_dict without the names that share a kept tensor's storage, metadata with
    {dropped name: kept name} added), safetensors' rule."""
    state_dict = model.state_dict()
    metadata = dict(metadata) if metadata else {}
    for keep, names in _duplicates(state_dict).items():
        for name in names:
            metadata.setdefault(name, keep)
            del state_dict[name]
    if force_contiguous:
        state_dict = {k: v.contiguous() for k, v in state_dict.items()}
    return state_dict, metadata


def save_model(model, filename, metadata=None, force_contiguous=False, *, compress=None,
               checksum="none"):
    """Saves a module's state_dict, each shared storage once (tied weights): the names
    left out are recorded in the metadata as {dropped name: kept name}, as safetensors
    does, and load_model restores them."""
    state_dict, metadata = _deduplicated(model, metadata, force_contiguous)
    try:
        save_file(state_dict, filename, metadata or None, compress=compress, checksum=checksum)
    except ValueError as e:
        raise ValueError(f"{e} (or save_model(..., force_contiguous=True))") from None


def load_model(model, filename, strict=True, device="cpu"):
    """Loads a file into a module (tied weights restored). Returns (missing, unexpected)
    names; with strict=True either being non-empty raises RuntimeError."""
    state_dict = load_file(filename, device=device)
    dropped = _duplicates(model.state_dict(), preferred=state_dict.keys())
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing)
    unexpected = list(unexpected)
    for names in dropped.values():
        for name in names:
            if name in missing:
                missing.discard(name)  # filled through the tensor it shares memory with
            else:
                unexpected.append(name)
    if strict and (missing or unexpected):
        message = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            message += "\n    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(missing))
        if unexpected:
            message += "\n    Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(message)
    return missing, unexpected
