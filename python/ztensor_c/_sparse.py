"""Sparse objects as SciPy arrays, or as SciPy-style tuples when SciPy isn't installed.

- sparse_csr: `scipy.sparse.csr_array((data, indices, indptr), shape)`, or the tuple
  `(data, indices, indptr)`
- sparse_coo: `scipy.sparse.coo_array((data, coords), shape)` (2-D: coords as rows and
  columns), or the tuple `(data, coords)` with coords of shape (ndim, nnz)

SciPy takes 2-D CSR and every COO up to its own limits, and values of the dtypes it
supports (not float16, bfloat16 or fp8): the others come back as the tuples too.
"""

try:
    import scipy.sparse as _scipy_sparse
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    _scipy_sparse = None


def csr(data, indices, indptr, shape):
    if _scipy_sparse is None or len(shape) != 2:
        return data, indices, indptr
    try:
        return _scipy_sparse.csr_array((data, indices.astype("int64"), indptr.astype("int64")),
                                       shape=tuple(shape))
    except (TypeError, ValueError):  # a dtype SciPy has no sparse arrays of
        return data, indices, indptr


def coo(data, coords, shape):
    if _scipy_sparse is None:
        return data, coords
    try:  # n-dimensional COO arrays since SciPy 1.13
        return _scipy_sparse.coo_array((data, tuple(c.astype("int64") for c in coords)),
                                       shape=tuple(shape))
    except (TypeError, ValueError):  # an older SciPy, or a dtype it has no sparse arrays of
        return data, coords
