"""PyTorch support: tensors from a reader, and the raw bytes of tensors to write.

Loading: a raw component of a local mapped file becomes a tensor over the file's pages
mapped copy-on-write by torch itself (`torch.from_file(path, shared=False)`, one
mapping per file and dtype, what safetensors does): no byte is read until used, and
writing to the tensor changes only the process's copy. PyTorch has no read-only
tensors, so the reader's own read-only mapping is not handed to it. A model's layer
tensors are cut from one view per tensor of its first layer by `unbind` (see _cut, and
python/README.md for the one thing PyTorch treats differently in such tensors). Everything
else (compressed, remote, pread readers, big-endian legacy data, quantized blocks) is
decoded straight into tensors of their own, in one parallel batch.
"""

import functools
import operator
import os
import threading

import numpy as np
import torch

from . import _dtypes, _lib, _plan
from ._handle import _DATA
from ._lib import ffi, lib

_OK = lib.ZT_OK


def torch_dtype(code, logical):
    """The torch dtype of a component, or None when torch has none (packed sub-byte)."""
    if logical is not None and logical in _dtypes.LOGICAL and _dtypes.LOGICAL[logical][0] == code:
        name = _dtypes.LOGICAL[logical][4]
        if logical in _dtypes.PACKED:
            return None
        return getattr(torch, name, None)
    return getattr(torch, _dtypes.TORCH[code], None)


def raw_of(t):
    """(contiguous NumPy array of the tensor's bytes, zt dtype, logical type) of a CPU
    copy of `t`, for the writer."""
    t = t.detach()
    if t.is_sparse or t.layout != torch.strided:
        raise ValueError("sparse torch tensors: convert to SciPy (or dense) to write them")
    t = t.to("cpu").contiguous()
    dtype = t.dtype
    for code, name in _dtypes.TORCH.items():
        if getattr(torch, name, None) == dtype:
            logical = None
            break
    else:
        for logical, spec in _dtypes.LOGICAL.items():
            if spec[4] is not None and getattr(torch, spec[4], None) == dtype:
                code = spec[0]
                break
        else:
            raise ValueError(f"no zTensor dtype for torch dtype {dtype}")
    # every view below keeps the element size, so the array has the tensor's shape
    if logical is not None and logical.startswith("complex"):
        arr = t.numpy()
    elif code == _dtypes.BF16:
        arr = t.view(torch.int16).numpy().view(np.uint16)
    elif logical is not None:
        arr = t.view(torch.uint8).numpy()
    elif code in (_dtypes.U16, _dtypes.U32, _dtypes.U64):
        signed = {_dtypes.U16: torch.int16, _dtypes.U32: torch.int32, _dtypes.U64: torch.int64}[code]
        arr = t.view(signed).numpy().view(_dtypes.STORAGE_NUMPY[code])
    else:
        arr = t.numpy()
    return (arr if arr.flags.c_contiguous else arr.copy(order="C")), code, logical


class _Storages:
    """Copy-on-write torch mappings of the files of one reader and a flat tensor of each
    dtype over each (what torch.as_strided cuts tensors from). A file whose tensors are
    all of one dtype (`only`) is mapped as a tensor of it in one call (torch.from_file);
    else the whole file once as an untyped storage, viewed as each dtype. (A file first
    mapped for one dtype and later asked for another, as safe_open's get_tensor may, is
    mapped again whole: a typed mapping may stop short of the file's end.)"""

    def __init__(self):
        self._by_path = {}
        # transformers materializes get_slice()[...] of one safe_open on a thread pool: two
        # threads mapping one file at once would give its tensors two storages (and
        # save_pretrained, which groups tensors by storage, other shards than safetensors')
        self._lock = threading.Lock()

    def flat(self, path, dtype, only=False):
        with self._lock:
            return self._flat(path, dtype, only)

    def _flat(self, path, dtype, only):
        entry = self._by_path.get(path)
        if entry is None:
            size = os.path.getsize(path)
            entry = self._by_path[path] = [None, size, {}]
            if only and _FROM_FILE is not None and size >= dtype.itemsize:
                entry[2][dtype] = _FROM_FILE(path, shared=False, size=size // dtype.itemsize, dtype=dtype)
        storage, size, flats = entry
        flat = flats.get(dtype)
        if flat is None:
            if storage is None:
                storage = entry[0] = torch.UntypedStorage.from_file(path, shared=False, nbytes=size)
            flat = flats[dtype] = torch.empty((0,), dtype=dtype).set_(storage, 0, (size // dtype.itemsize,))
        return flat


_FROM_FILE = getattr(torch, "from_file", None)


@functools.lru_cache(maxsize=None)  # the same answer for the process
def _torch_resolve(code, logical):
    """The torch dtype of a zt dtype code and logical type (bytes or None), uint8 for
    packed bytes torch has no dtype of, and its size."""
    dtype = torch_dtype(code, None if logical is None else logical.decode()) or torch.uint8
    return dtype, dtype.itemsize


def load(handle, names, device="cpu", copy=False, storages=None):
    """{name: torch tensor} of the named objects of `handle` (all for None), in file
    order. Raw tensors of a mapped file are cut from one copy-on-write storage per file;
    where every object is dense and plain, without Python per tensor (see _cut)."""
    storages = storages if storages is not None else _Storages()
    p = _plan.plan(handle, handle.indices(names), _torch_resolve)
    # the files' paths when a plain component's bytes are at its file's offset
    paths = handle.shard_paths() if not copy and handle.views_at_offsets() else None
    on_cpu = device == "cpu"
    strides = _plan.Strides()
    if paths is not None and p.all_dense_raw and on_cpu:
        tensors = _cut(p, paths, storages, strides)
        if tensors is not None:
            out = dict(zip(p.names, tensors))
            for k in _plan.aliases(p):
                out[p.names[k]] = out[p.names[k]].clone()
            return out
    # other mapped files: a plain component is at its file's offset (the plan's offset and
    # shard) when the library's view of it is zero-copy
    files = paths if paths is not None else (
        handle.shard_paths() if handle.kind == "mapped" and not copy else None)
    out = dict.fromkeys(p.names)
    pending = []
    for k, name in enumerate(p.names):
        i = p.indices[k]
        if not p.dense[k]:
            out[name] = _other(handle, i)
            continue
        dtype, shape, itemsize, offset = p.dtype[k], p.shape[k], p.itemsize[k], p.offset[k]
        path = files[p.shard[k]] if files is not None and p.raw[k] else None
        if path is not None and offset % itemsize == 0 and (paths is not None or handle.view(i, _DATA)[3]):
            t = torch.as_strided(storages.flat(path, dtype), shape, strides[shape], offset // itemsize)
            out[name] = t if on_cpu else t.to(device)
            continue
        t = out[name] = torch.empty(shape, dtype=dtype)
        pending.append((i, t))
    if pending:
        _batch_read(handle, pending)
        if not on_cpu:
            for i, t in pending:
                out[handle.names()[i]] = t.to(device)
    if files is not None and on_cpu:
        for k in _plan.aliases(p):
            out[p.names[k]] = out[p.names[k]].clone()
    return out


def _cut(p, paths, storages, strides):
    """Every object's tensor (an iterator, in plan order) cut from the flat tensor of its
    file and dtype, or None when one is not aligned to its dtype or its file has no path:
    a repeat of objects (a model's layers) one strided view per object of its first
    repeat, cut by `unbind`; objects between repeats one `as_strided` each, run by `map`
    (see _plan.cut)."""
    shards = set(p.shard)
    if any(paths[s] is None for s in shards):
        return None
    offset, itemsize = p.offset, p.itemsize
    if len(shards) == 1 and len(p.dtypes) == 1:
        flat = storages.flat(paths[p.shard[0]], p.dtypes[0], only=True)
        flat_of = lambda _k: flat  # noqa: E731
    else:
        one = len(p.dtypes) == 1
        flats = {(s, d): storages.flat(paths[s], d, one) for s, d in set(zip(p.shard, p.dtype))}
        flat = None
        flat_of = lambda k: flats[p.shard[k], p.dtype[k]]  # noqa: E731

    def stacked(k, shape, repeats, stride):
        size = itemsize[k]
        if offset[k] % size or stride % size:
            return None
        whole = flat_of(k).as_strided((repeats,) + shape, (stride // size,) + strides[shape], offset[k] // size)
        return whole.unbind(0)

    def loose(start, end):
        at, sizes = offset[start:end], itemsize[start:end]
        if any(map(operator.mod, at, sizes)):
            return None
        shapes = p.shapes(start, end)
        # one file and dtype: the flat tensor's own as_strided, a little less per call
        views = (flat.as_strided,) if flat is not None else (torch.as_strided, map(flat_of, range(start, end)))
        return map(*views, shapes, map(strides.__getitem__, shapes), map(operator.floordiv, at, sizes))

    return _plan.cut(p, stacked, loose)


def _batch_read(handle, pending):
    requests = ffi.new("zt_load_request[]", len(pending))
    for k, (index, t) in enumerate(pending):
        r = requests[k]
        r.object = index
        r.role = ffi.NULL
        r.dst = ffi.cast("void *", t.data_ptr())
        r.dst_size = t.numel() * t.element_size()
    status = lib.zt_batch_load(handle.ptr, requests, len(pending), ffi.NULL)
    if status != _OK:
        raise _lib.error(status)


def _other(handle, index):
    """A non-dense object as torch: dequantized GGUF blocks, sparse COO/CSR tensors, or
    {role: tensor}."""
    value = handle.value(index, copy=True)
    return from_value(value, handle.object(index))


def from_value(value, obj):
    if isinstance(value, np.ndarray):
        return from_numpy(value)
    if obj.format == "sparse_csr":
        values, indices, indptr = _parts(value, "csr")
        return torch.sparse_csr_tensor(torch.from_numpy(np.asarray(indptr, np.int64)),
                                       torch.from_numpy(np.asarray(indices, np.int64)),
                                       from_numpy(np.asarray(values)), tuple(obj.shape))
    if obj.format == "sparse_coo":
        values, coords = _parts(value, "coo")
        return torch.sparse_coo_tensor(torch.from_numpy(np.asarray(coords, np.int64)),
                                       from_numpy(np.asarray(values)), tuple(obj.shape))
    return {k: from_numpy(v) for k, v in value.items()}


def _parts(value, kind):
    if isinstance(value, tuple):
        return value
    if kind == "csr":
        return value.data, value.indices, value.indptr
    return value.data, np.stack(value.coords)


def from_numpy(arr):
    """A torch tensor of its own from a NumPy array (bf16/fp8 of ml_dtypes or of our
    structured raw dtypes included)."""
    if not arr.flags.c_contiguous or not arr.flags.writeable:
        arr = arr.copy()
    code, logical = _dtypes.from_numpy(arr.dtype)
    dtype = torch_dtype(code, logical)
    if dtype is None or arr.dtype.names is not None or arr.dtype.kind == "V" or \
            code == _dtypes.BF16 or (logical is not None and not logical.startswith("complex")):
        # flat first: NumPy changes the item size of no 0-d array (bf16 0-d results)
        raw = torch.from_numpy(arr.reshape(-1).view(np.uint8))
        if dtype is None:
            return raw
        return raw.view(dtype).reshape(arr.shape)
    return torch.from_numpy(arr)
