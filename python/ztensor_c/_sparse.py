"""Sparse objects as SciPy arrays, or as SciPy-style tuples when SciPy isn't installed.

- sparse_csr: `scipy.sparse.csr_array((data, indices, indptr), shape)`, or the tuple
  `(data, indices, indptr)`
- sparse_coo: `scipy.sparse.coo_array((data, coords), shape)` (2-D: coords as rows and
  columns), or the tuple `(data, coords)` with coords of shape (ndim, nnz)
"""

try:
    import scipy.sparse as _scipy_sparse
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    _scipy_sparse = None


def csr(data, indices, indptr, shape):
    if _scipy_sparse is None or len(shape) != 2:
        return data, indices, indptr
    return _scipy_sparse.csr_array((data, indices.astype("int64"), indptr.astype("int64")),
                                   shape=tuple(shape))


def coo(data, coords, shape):
    if _scipy_sparse is None:
        return data, coords
    if len(shape) == 2:
        return _scipy_sparse.coo_array((data, (coords[0].astype("int64"), coords[1].astype("int64"))),
                                       shape=tuple(shape))
    try:  # SciPy >= 1.13 has n-dimensional COO arrays
        return _scipy_sparse.coo_array((data, tuple(c.astype("int64") for c in coords)),
                                       shape=tuple(shape))
    except (TypeError, ValueError):
        return data, coords
