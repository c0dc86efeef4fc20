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
    a set holds them; 0 for one file), itemsize (bytes of one element of `dtype`).
    all_dense_raw: every object is dense and raw (the loaders' one-call case).
    """

    __slots__ = ("names", "indices", "dense", "dtype", "shape", "raw", "offset", "shard",
                 "itemsize", "all_dense_raw")


def _runs(indices):
    """[(first, count)] of the runs of consecutive indices of `indices` (sorted, unique)."""
    if isinstance(indices, range):
        return [(indices.start, len(indices))] if len(indices) else []
    runs = []
    for i in indices:
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1][1] += 1
        else:
            runs.append([i, 1])
    return runs


def _columns(handle, runs, m):
    """(offset, decoded length, dtype, shard, flags, shape) lists of the `m` objects of
    `runs`, from one zt_file_get_columns call per run (one for a whole file) into one
    block: the two uint64 columns, the four uint32 ones, then the dimensions."""
    cols = ffi.new("zt_object_columns *")
    block, total = _fill(handle, cols, runs, m, 2 * m)  # most tensors have two dimensions or fewer
    if block is None:  # more: ask how many
        cols.offset = cols.decoded_length = cols.dtype = cols.shard = cols.flags = cols.ndim = ffi.NULL
        cols.dims = ffi.NULL
        total = 0
        for first, count in runs:
            _lib.check(_lib.file_get_columns(handle.ptr, first, count, cols))
            total += cols.dims_count
        block, total = _fill(handle, cols, runs, m, total)
    wide = ffi.unpack(block, 2 * m)
    narrow = ffi.unpack(ffi.cast("uint32_t *", block + 2 * m), 4 * m)
    dims = tuple(ffi.unpack(block + 4 * m, total))  # a tuple's slices are the shapes
    starts = list(accumulate(narrow[3 * m:], initial=0))
    shapes = list(map(dims.__getitem__, map(slice, starts, islice(starts, 1, None))))
    return wide[:m], wide[m:], narrow[:m], narrow[m:2 * m], narrow[2 * m:3 * m], shapes


def _fill(handle, cols, runs, m, capacity):
    """Fills a new block (see _columns) run by run, with room for `capacity` dimensions:
    (block, dimensions written), or (None, 0) when `capacity` is too small."""
    block = ffi.new("uint64_t[]", 4 * m + max(capacity, 1))
    narrow = ffi.cast("uint32_t *", block + 2 * m)
    at = written = 0
    for first, count in runs:
        cols.offset = block + at
        cols.decoded_length = block + m + at
        cols.dtype = narrow + at
        cols.shard = narrow + m + at
        cols.flags = narrow + 2 * m + at
        cols.ndim = narrow + 3 * m + at
        cols.dims = block + 4 * m + written
        cols.dims_capacity = capacity - written
        status = _lib.file_get_columns(handle.ptr, first, count, cols)
        if status == _lib.ERR_BUFFER_TOO_SMALL:
            return None, 0
        _lib.check(status)
        at += count
        written += cols.dims_count
    return block, written


def _types(handle, runs, m):
    """The logical type (bytes or None) of component 0 of the `m` objects of `runs`, from
    the type column of zt_file_get_objects (read as one NumPy column of addresses)."""
    entries = ffi.new("zt_object_entry[]", m)
    at = 0
    for first, count in runs:
        _lib.check(_lib.file_get_objects(handle.ptr, first, entries + at, count))
        at += count
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
    p = Plan()
    if isinstance(indices, range) and len(indices) == len(names):
        p.names = names
    else:
        indices = list(indices)
        p.names = [names[i] for i in indices]
    p.indices = indices
    n = len(p.names)
    if n == 0:
        p.dense = p.dtype = p.shape = p.raw = p.offset = p.shard = p.itemsize = []
        p.all_dense_raw = True
        return p
    runs = _runs(indices)
    offset, decoded, codes, shard, flags, shapes = _columns(handle, runs, n)
    distinct = set(flags)
    typed = any(f & _lib.OBJECT_TYPED for f in distinct)
    keys = list(zip(codes, _types(handle, runs, n))) if typed else codes
    resolved = {k: resolve(*k) if typed else resolve(k, None) for k in set(keys)}
    if len(resolved) == 1:
        dtype, size = next(iter(resolved.values()))
        p.dtype = [dtype] * n
        p.itemsize = itemsize = [size] * n
    else:
        p.dtype = [resolved[k][0] for k in keys]
        p.itemsize = itemsize = [resolved[k][1] for k in keys]
    # The library checked that a dense object's shape holds decoded_length / the dtype's
    # size elements; where the element the caller resolved to is not one stored element
    # (a logical type, or a dtype it has no type of), the shape is used only when it
    # holds as many elements as the decoded bytes do, else one dimension of that count.
    exact = {k for k, (_dt, size) in resolved.items()
             if size == _dtypes.SIZES[k[0] if typed else k] and not (typed and k[1])}
    if len(exact) != len(resolved):
        for k, key in enumerate(keys):
            if key not in exact:
                count = decoded[k] // itemsize[k]
                if _elements(shapes[k]) != count:
                    shapes[k] = (count,)
    p.shape = shapes
    p.offset = offset
    p.shard = shard
    p.all_dense_raw = all(f & _DENSE_PLAIN == _DENSE_PLAIN for f in distinct)
    if p.all_dense_raw:
        p.dense = p.raw = [True] * n
    else:
        p.dense = [bool(f & _lib.OBJECT_DENSE) for f in flags]
        p.raw = [bool(f & _lib.OBJECT_PLAIN) for f in flags]
    return p


def _elements(dims):
    n = 1
    for d in dims:
        n *= d
    return n
