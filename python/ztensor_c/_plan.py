"""The plan of one load_file: what each object of a file becomes, worked out in columns.

numpy.load_file and torch.load_file turn every object of a file into a value. For the
common object (dense, one component) that takes its name, dtype, shape and where its
bytes are. One C call describes every object column by column (zt_file_get_columns), each
column becomes a Python list in one step (ffi.unpack), and the shapes are cut from the
one list of every dimension by `map`, so no Python code runs per object; what is left per
object is the one call that makes its array or tensor, which the loaders run through
`map` as well. Per-object Python remains only for what is rare: objects with a logical
type whose values don't map one to one onto stored elements.
"""

from itertools import accumulate, islice
from operator import floordiv

import numpy as np

from . import _dtypes, _lib
from ._lib import ffi

_DENSE_PLAIN = _lib.OBJECT_DENSE | _lib.OBJECT_PLAIN


class Plan:
    """The objects of one load, in file order.

    names: every object's name; indices: its index in the file.
    dense: for each object, whether it is dense with one component (list of bool).
    Of every object (meaningful for the dense ones): dtype (what `resolve` gave for its
    zt dtype and logical type), shape (a tuple whose elements are the element count its
    decoded bytes hold, else one dimension of that count), raw (its stored bytes are its
    values, list of bool), offset (of its stored bytes in its file), shard (which file of
    a set holds them; 0 for one file), count (elements), itemsize.
    all_dense_raw: every object is dense and raw (the loaders' one-call case).
    """

    __slots__ = ("names", "indices", "dense", "dtype", "shape", "raw", "offset", "shard",
                 "count", "itemsize", "all_dense_raw")


def _columns(handle, n):
    """(offset, decoded length, dtype, shard, flags, dims per object) lists of every
    object."""
    cols = ffi.new("zt_object_columns *")
    offset = cols.offset = ffi.new("uint64_t[]", n)
    decoded = cols.decoded_length = ffi.new("uint64_t[]", n)
    dtype = cols.dtype = ffi.new("uint32_t[]", n)
    shard = cols.shard = ffi.new("uint32_t[]", n)
    flags = cols.flags = ffi.new("uint32_t[]", n)
    ndim = cols.ndim = ffi.new("uint32_t[]", n)
    dims = cols.dims = ffi.new("uint64_t[]", 2 * n)  # most tensors have two dimensions or fewer
    cols.dims_capacity = 2 * n
    status = _lib.file_get_columns(handle.ptr, 0, n, cols)
    if status == _lib.ERR_BUFFER_TOO_SMALL:
        dims = cols.dims = ffi.new("uint64_t[]", cols.dims_count)
        cols.dims_capacity = cols.dims_count
        status = _lib.file_get_columns(handle.ptr, 0, n, cols)
    _lib.check(status)
    ndim = ffi.unpack(ndim, n)
    dims = ffi.unpack(dims, cols.dims_count)
    starts = list(accumulate(ndim, initial=0))
    shapes = list(map(tuple, map(dims.__getitem__, map(slice, starts, islice(starts, 1, None)))))
    return (ffi.unpack(offset, n), ffi.unpack(decoded, n), ffi.unpack(dtype, n), ffi.unpack(shard, n),
            ffi.unpack(flags, n), shapes)


def _types(handle, n):
    """The logical type (bytes or None) of every object's component 0, from the type
    column of zt_file_get_objects (read as one NumPy column of addresses)."""
    entries = ffi.new("zt_object_entry[]", n)
    _lib.check(_lib.file_get_objects(handle.ptr, 0, entries, n))
    at = np.frombuffer(ffi.buffer(entries), _type_column())["type"].tolist()
    text = {a: None if a == 0 else ffi.string(ffi.cast("const char *", a)) for a in set(at)}
    return list(map(text.__getitem__, at))


_TYPE_COLUMN = None


def _type_column():
    """A NumPy structured dtype of zt_object_entry's `type` pointer, as an address."""
    global _TYPE_COLUMN
    if _TYPE_COLUMN is None:
        field = dict(ffi.typeof("zt_object_entry").fields)["type"]
        _TYPE_COLUMN = np.dtype({"names": ["type"], "formats": [f"=u{ffi.sizeof(field.type)}"],
                                 "offsets": [field.offset], "itemsize": ffi.sizeof("zt_object_entry")})
    return _TYPE_COLUMN


def plan(handle, indices, resolve):
    """The Plan of the objects `indices` (file order) of `handle`. `resolve(code, logical)`
    gives (dtype, itemsize) for a zt dtype code and logical type name (bytes or None),
    once per distinct pair."""
    names = handle.names()
    n = len(names)
    p = Plan()
    if n == 0:
        p.names, p.indices = [], indices
        p.dense = p.dtype = p.shape = p.raw = p.offset = p.shard = p.count = p.itemsize = []
        p.all_dense_raw = True
        return p
    offset, decoded, codes, shard, flags, shapes = _columns(handle, n)
    distinct = set(flags)
    typed = any(f & _lib.OBJECT_TYPED for f in distinct)
    keys = list(zip(codes, _types(handle, n))) if typed else codes
    resolved = {k: resolve(*k) if typed else resolve(k, None) for k in set(keys)}
    if len(resolved) == 1:
        dtype, size = next(iter(resolved.values()))
        p.dtype = [dtype] * n
        p.itemsize = itemsize = [size] * n
    else:
        p.dtype = [resolved[k][0] for k in keys]
        p.itemsize = itemsize = [resolved[k][1] for k in keys]
    p.count = count = list(map(floordiv, decoded, itemsize))
    # The library checked that a dense object's shape holds decoded_length / the dtype's
    # size elements; where the element the caller resolved to is not one stored element
    # (a logical type, or a dtype it has no type of), the shape is used only when it
    # holds `count` elements, else one dimension of `count`.
    exact = {k for k, (_dt, size) in resolved.items()
             if size == _dtypes.SIZES[k[0] if typed else k] and not (typed and k[1])}
    if len(exact) != len(resolved):
        for k, key in enumerate(keys):
            if key not in exact and _elements(shapes[k]) != count[k]:
                shapes[k] = (count[k],)
    p.shape = shapes
    p.offset = offset
    p.shard = shard
    p.all_dense_raw = all(f & _DENSE_PLAIN == _DENSE_PLAIN for f in distinct)
    if p.all_dense_raw:
        p.dense = p.raw = [True] * n
    else:
        p.dense = [bool(f & _lib.OBJECT_DENSE) for f in flags]
        p.raw = [bool(f & _lib.OBJECT_PLAIN) for f in flags]
    if isinstance(indices, range) and len(indices) == n:
        p.names, p.indices = names, indices
    else:
        indices = list(indices)
        p.names = [names[i] for i in indices]
        p.indices = indices
        for field in ("dense", "dtype", "shape", "raw", "offset", "shard", "count", "itemsize"):
            column = getattr(p, field)
            setattr(p, field, [column[i] for i in indices])
        p.all_dense_raw = all(p.dense) and all(p.raw)
    return p


def _elements(dims):
    n = 1
    for d in dims:
        n *= d
    return n
