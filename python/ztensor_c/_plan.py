"""The plan of one load_file: what each object of a file becomes, worked out in columns.

numpy.load_file and torch.load_file turn every object of a file into a value. For the
common object (dense, one component) that takes its name, dtype, shape and where its
bytes are. One C call describes every object (zt_file_get_objects); NumPy reads that
block as columns and does the per-object arithmetic (element counts, shape checks) for
all objects at once, so what is left per object is the one call that makes its array or
tensor, which the loaders run through `map` (a loop in C). Per-object Python remains
only for what is rare: shapes of three or more dimensions, and objects that are not
dense.
"""

import numpy as np

from . import _lib
from ._lib import ffi

_ENTRY_DTYPE = None


def _entry_dtype():
    """A NumPy structured dtype laid out as zt_object_entry: the fields the plan reads,
    as unsigned integers of their C sizes (pointers as addresses)."""
    global _ENTRY_DTYPE
    if _ENTRY_DTYPE is None:
        c_fields = dict(ffi.typeof("zt_object_entry").fields)
        names = ["format", "shape", "ndim", "component_count", "dtype", "encoding", "type",
                 "offset", "decoded_length"]
        _ENTRY_DTYPE = np.dtype({
            "names": names,
            "formats": [f"=u{ffi.sizeof(c_fields[k].type)}" for k in names],
            "offsets": [c_fields[k].offset for k in names],
            "itemsize": ffi.sizeof("zt_object_entry")})
    return _ENTRY_DTYPE


def _text(address):
    return ffi.string(ffi.cast("const char *", address)) if address else None


class Plan:
    """The objects of one load, in file order.

    names: every object's name; indices: its index in the file.
    dense: for each object, whether it is dense with one component (list of bool).
    Of every object (meaningful for the dense ones): dtype (what `resolve` gave for its
    zt dtype and logical type), shape (a tuple whose elements are the element count its
    decoded bytes hold, else one dimension of that count), raw (stored raw, list of
    bool), offset (of its stored bytes in its file), count (elements), itemsize.
    all_dense_raw: every object is dense and raw (the loaders' one-call case).
    """

    __slots__ = ("names", "indices", "dense", "dtype", "shape", "raw", "offset", "count",
                 "itemsize", "all_dense_raw")


def plan(handle, indices, resolve):
    """The Plan of the objects `indices` (file order) of `handle`. `resolve(code, logical)`
    gives (dtype, itemsize) for a zt dtype code and logical type name (bytes or None),
    once per distinct pair."""
    names = handle.names()
    n = len(names)
    p = Plan()
    entries = ffi.new("zt_object_entry[]", max(n, 1))
    if n:
        _lib.check(_lib.file_get_objects(handle.ptr, 0, entries, n))
    table = np.frombuffer(ffi.buffer(entries), _entry_dtype())[:n]
    if isinstance(indices, range) and len(indices) == n:
        p.names = names
    else:
        indices = list(indices)
        table = table[np.asarray(indices, dtype=np.intp)]
        p.names = [names[i] for i in indices]
    p.indices = indices
    m = len(table)
    if m == 0:
        p.dense = p.dtype = p.shape = p.raw = p.offset = p.count = p.itemsize = []
        p.all_dense_raw = True
        return p

    # dense, one component, raw: the format strings are the library's, a few distinct
    # pointers; Python's sets over the columns' lists cost less than NumPy's unique
    formats = table["format"].tolist()
    dense_at = {a for a in set(formats) if _text(a) == b"dense"}
    components = table["component_count"].tolist()
    encodings = table["encoding"].tolist()
    p.all_dense_raw = (dense_at.issuperset(formats) and set(components) == {1}
                       and set(encodings) == {_lib.ENCODING_RAW})
    if p.all_dense_raw:
        p.dense = p.raw = [True] * m
    else:
        p.dense = [f in dense_at and c == 1 for f, c in zip(formats, components)]
        p.raw = [e == _lib.ENCODING_RAW for e in encodings]

    # the (dtype, logical type) of each, resolved once per distinct pair
    codes = table["dtype"].tolist()
    types = table["type"].tolist()
    keys = list(zip(codes, types)) if any(types) else codes
    resolved = {k: resolve(k[0], _text(k[1])) if type(k) is tuple else resolve(k, None)
                for k in set(keys)}
    decoded = table["decoded_length"]
    if len(resolved) == 1:
        dtype, size = resolved.popitem()[1]
        p.dtype = [dtype] * m
        p.itemsize = [size] * m
        count = decoded // size
    else:
        p.dtype = [resolved[k][0] for k in keys]
        p.itemsize = [resolved[k][1] for k in keys]
        count = decoded // np.array(p.itemsize, np.uint64)
    p.count = count = count.tolist()

    # shapes: (count,) unless the stored shape holds exactly `count` elements
    ndim = table["ndim"]
    shape = list(zip(count))
    two = ndim == 2
    if two.any():
        for k, rows, cols in _two_dimensional(table["shape"][two], two.nonzero()[0]):
            if rows * cols == count[k]:
                shape[k] = (rows, cols)
    if not ndim.all():
        for k in (ndim == 0).nonzero()[0].tolist():
            if count[k] == 1:
                shape[k] = ()
    if (ndim > 2).any():
        for k in (ndim > 2).nonzero()[0].tolist():
            dims = tuple(ffi.unpack(ffi.cast("const uint64_t *", int(table["shape"][k])), int(ndim[k])))
            if _elements(dims) == count[k]:
                shape[k] = dims
    p.shape = shape
    p.offset = table["offset"].tolist()
    return p


def _elements(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _two_dimensional(at, positions):
    """(position, rows, columns) of each two-dimensional entry, its shape array at
    address at[j] (a uint64 array the reader owns). One buffer from the lowest to the
    highest of them is indexed at just their elements (nothing else in between is read);
    when one is not 8-byte aligned from the lowest, each is read on its own. Python's
    integers multiply them afterwards, exactly."""
    base = int(at.min())
    if ((at - base) & 7).any():
        dims = [ffi.unpack(ffi.cast("const uint64_t *", a), 2) for a in at.tolist()]
        return [(k, r, c) for k, (r, c) in zip(positions.tolist(), dims)]
    span = int(at.max()) - base + 16
    memory = np.frombuffer(ffi.buffer(ffi.cast("char *", base), span), "=u8")
    first = (at - base) >> 3
    return zip(positions.tolist(), memory[first].tolist(), memory[first + 1].tolist())
