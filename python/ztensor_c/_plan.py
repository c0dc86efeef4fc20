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

import math
from itertools import accumulate, chain, repeat

import numpy as np

from . import _dtypes, _lib
from ._lib import ffi, lib

_DENSE_PLAIN = lib.ZT_OBJECT_DENSE | lib.ZT_OBJECT_PLAIN


class Plan:
    """The objects of one load, in file order.

    names: every object's name; indices: its index in the file.
    dense: for each object, whether it is dense with one component (list of bool).
    Of every object (meaningful for the dense ones): dtype (what `resolve` gave for its
    zt dtype and logical type), shape (a tuple whose elements are the element count its
    decoded bytes hold, else one dimension of that count; built on first use, `shapes`
    gives some), raw (its stored bytes are its values, list of bool), offset (of its
    stored bytes in its file), shard (which file of a set holds them; 0 for one file),
    itemsize (bytes of one element of `dtype`).
    dtypes: the distinct dtypes. all_dense_raw: every object is dense and raw (the
    loaders' one-call case).
    """

    __slots__ = ("names", "indices", "dense", "dtype", "raw", "offset", "shard", "itemsize",
                 "dtypes", "all_dense_raw", "_handle", "_dims", "_starts", "_shape")

    @property
    def shape(self):
        if self._shape is None:
            self._shape = self.shapes(0, len(self.names))
        return self._shape

    def shapes(self, start, end):
        """The shapes of objects start .. end - 1 (list)."""
        if self._shape is not None:
            return self._shape[start:end]
        starts = self._starts
        return list(map(self._dims.__getitem__, map(slice, starts[start:end], starts[start + 1:end + 1])))

    def runs(self):
        """[(position, period, repeats, stride)] of the objects (zt_file_get_runs over
        each run of consecutive indices): from `position`, `repeats` repeats of `period`
        objects, each `stride` bytes after the last, when `repeats` > 1 (all dense and
        plain, of one dtype and shape with their peers); objects without a repeat as runs
        of one repeat."""
        out = []
        at = 0
        for first, count in _spans(self.indices):
            runs = ffi.new("zt_object_run[]", count)
            found = ffi.new("size_t *")
            _lib.check(lib.zt_file_get_runs(self._handle.ptr, first, count, runs, count, found))
            out.extend((r.first - first + at, r.period, r.repeats, r.stride)
                       for r in ffi.unpack(runs, found[0]))
            at += count
        return out


def _spans(indices):
    """[(first, count)] of the spans of consecutive indices of `indices` (sorted, unique)."""
    if isinstance(indices, range):
        return [(indices.start, len(indices))] if len(indices) else []
    spans = []
    for i in indices:
        if spans and spans[-1][0] + spans[-1][1] == i:
            spans[-1][1] += 1
        else:
            spans.append([i, 1])
    return spans


def _columns(handle, spans, m):
    """The columns of the `m` objects of `spans`, from one zt_file_get_columns call per
    span (one for a whole file) into one block (the two uint64 columns, the four uint32
    ones, then the dimensions): the offset, dtype, shard and flags lists, the block (the
    decoded lengths at block[m + k], read only where needed), every dimension (a tuple:
    its slices are the shapes) and each object's start in it (a list, one longer)."""
    cols = ffi.new("zt_object_columns *")
    block, total = _fill(handle, cols, spans, m, 2 * m)  # most tensors have two dimensions or fewer
    if block is None:  # more: ask how many
        cols.offset = cols.decoded_length = cols.dtype = cols.shard = cols.flags = cols.ndim = ffi.NULL
        cols.dims = ffi.NULL
        total = 0
        for first, count in spans:
            _lib.check(lib.zt_file_get_columns(handle.ptr, first, count, cols))
            total += cols.dims_count
        block, total = _fill(handle, cols, spans, m, total)
    narrow = ffi.unpack(ffi.cast("uint32_t *", block + 2 * m), 4 * m)
    dims = tuple(ffi.unpack(block + 4 * m, total))
    starts = list(accumulate(narrow[3 * m:], initial=0))
    return ffi.unpack(block, m), block, narrow[:m], narrow[m:2 * m], narrow[2 * m:3 * m], dims, starts


def _fill(handle, cols, spans, m, capacity):
    """Fills a new block (see _columns) span by span, with room for `capacity` dimensions:
    (block, dimensions written), or (None, 0) when `capacity` is too small."""
    block = ffi.new("uint64_t[]", 4 * m + max(capacity, 1))
    narrow = ffi.cast("uint32_t *", block + 2 * m)
    at = written = 0
    for first, count in spans:
        cols.offset = block + at
        cols.decoded_length = block + m + at
        cols.dtype = narrow + at
        cols.shard = narrow + m + at
        cols.flags = narrow + 2 * m + at
        cols.ndim = narrow + 3 * m + at
        cols.dims = block + 4 * m + written
        cols.dims_capacity = capacity - written
        status = lib.zt_file_get_columns(handle.ptr, first, count, cols)
        if status == lib.ZT_ERR_BUFFER_TOO_SMALL:
            return None, 0
        _lib.check(status)
        at += count
        written += cols.dims_count
    return block, written


def _types(handle, spans, m):
    """The logical type (bytes or None) of component 0 of the `m` objects of `spans`, from
    the type column of zt_file_get_objects (read as one NumPy column of addresses)."""
    entries = ffi.new("zt_object_entry[]", m)
    at = 0
    for first, count in spans:
        _lib.check(lib.zt_file_get_objects(handle.ptr, first, entries + at, count))
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
    p._handle = handle
    p._shape = None
    n = len(p.names)
    if n == 0:
        p.dense = p.dtype = p.raw = p.offset = p.shard = p.itemsize = p.dtypes = []
        p._shape = []
        p.all_dense_raw = True
        return p
    spans = _spans(indices)
    offset, block, codes, shard, flags, p._dims, p._starts = _columns(handle, spans, n)
    distinct = set(flags)
    typed = any(f & lib.ZT_OBJECT_TYPED for f in distinct)
    keys = list(zip(codes, _types(handle, spans, n))) if typed else codes
    resolved = {k: resolve(*k) if typed else resolve(k, None) for k in set(keys)}
    p.dtypes = list({dtype: None for dtype, _size in resolved.values()})
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
    if len(exact) != len(resolved):  # every shape made now, the few that differ replaced
        shapes = p.shape
        for k, key in enumerate(keys):
            if key not in exact:
                count = block[n + k] // itemsize[k]  # its decoded length
                if math.prod(shapes[k]) != count:
                    shapes[k] = (count,)
    p.offset = offset
    p.shard = shard
    p.all_dense_raw = all(f & _DENSE_PLAIN == _DENSE_PLAIN for f in distinct)
    if p.all_dense_raw:
        p.dense = p.raw = [True] * n
    else:
        p.dense = [bool(f & lib.ZT_OBJECT_DENSE) for f in flags]
        p.raw = [bool(f & lib.ZT_OBJECT_PLAIN) for f in flags]
    return p


def aliases(p):
    """Positions (plan order) of raw dense objects whose bytes an earlier one of the plan
    also has: zTensor v2 stores equal blobs once, so their views would share memory and a
    write through one name would show through another (safetensors' never alias). Those
    get copies of their own. Empty for other formats, which give each object its bytes."""
    h = p._handle
    if len(p.names) < 2 or h.format != "zt" or not h.version.startswith("2"):
        return ()
    places = list(zip(p.shard, p.offset))
    if len(set(places)) == len(places):
        return ()
    seen, out = set(), []
    for k, place in enumerate(places):
        if p.dense[k] and p.raw[k] and math.prod(p.shape[k]):
            if place in seen:
                out.append(k)
            seen.add(place)
    return out


# Repeats shorter than this are made as objects that don't repeat: a strided view and
# its cut cost about as much as two views.
_STACK_MIN = 3


def cut(p, stacked, loose):
    """Every object's value, an iterator in plan order, from runs of objects
    (Plan.runs): `stacked(k, shape, repeats, stride)` gives the `repeats` values of object
    k of a repeat's first one and its peers, `stride` bytes apart (one strided view cut in
    `repeats`, where the caller makes a view per object otherwise); `loose(start, end)`
    those of objects start .. end - 1, which don't repeat (or too few times to pay). None
    when a call gives None (the caller can't make views of them)."""
    n = len(p.names)
    if n < _STACK_MIN:  # one tensor of safe_open.get_tensor: nothing to search for
        return loose(0, n)
    pieces = []
    at = 0  # the first object not yet in a piece
    for start, period, repeats, stride in p.runs():
        if repeats < _STACK_MIN:
            continue
        if at < start:
            pieces.append(loose(at, start))
        groups = list(map(stacked, range(start, start + period), p.shapes(start, start + period),
                          repeat(repeats), repeat(stride)))
        if any(g is None for g in groups):
            return None
        pieces.append(chain.from_iterable(zip(*groups)))  # peer j of each object in turn
        at = start + period * repeats
    if at < n or not pieces:
        pieces.append(loose(at, n))
    if any(piece is None for piece in pieces):
        return None
    return pieces[0] if len(pieces) == 1 else chain.from_iterable(pieces)


class Strides(dict):
    """shape -> the element strides of a C-contiguous array of it (computed once each)."""

    def __missing__(self, shape):
        strides = []
        step = 1
        for d in reversed(shape):
            strides.append(step)
            step *= d
        st = self[shape] = tuple(reversed(strides))
        return st

