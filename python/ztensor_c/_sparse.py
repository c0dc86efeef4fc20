"""Sparse objects as SciPy arrays, or as SciPy-style tuples when SciPy isn't installed.

- sparse_csr: `scipy.sparse.csr_array((data, indices, indptr), shape)`, or the tuple
  `(data, indices, indptr)`
- sparse_coo: `scipy.sparse.coo_array((data, coords), shape)` (2-D: coords as rows and
  columns), or the tuple `(data, coords)` with coords of shape (ndim, nnz)

SciPy takes 2-D CSR and every COO up to its own limits, and values of the dtypes it
supports (not float16, bfloat16 or fp8): the others come back as the tuples too.
"""

_UNSET = object()
_scipy_sparse = _UNSET  # imported on the first sparse object (None: not installed)


def _scipy():
    global _scipy_sparse
    m = _scipy_sparse
    if m is _UNSET:
        try:
            import scipy.sparse as m
        except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
            m = None
        _scipy_sparse = m
    return m


def csr(data, indices, indptr, shape):
    scipy_sparse = _scipy() if len(shape) == 2 else None
    if scipy_sparse is None:
        return data, indices, indptr
    try:
        return scipy_sparse.csr_array((data, indices.astype("int64"), indptr.astype("int64")),
                                       shape=tuple(shape))
    except (TypeError, ValueError):  # a dtype SciPy has no sparse arrays of
        return data, indices, indptr


def coo(data, coords, shape):
    scipy_sparse = _scipy()
    if scipy_sparse is None:
        return data, coords
    try:  # n-dimensional COO arrays since SciPy 1.13
        return scipy_sparse.coo_array((data, tuple(c.astype("int64") for c in coords)),
                                       shape=tuple(shape))
    except (TypeError, ValueError):  # an older SciPy, or a dtype it has no sparse arrays of
        return data, coords
