"""Sparse objects: SciPy arrays when SciPy is installed, SciPy-style tuples without it."""

import numpy as np
import pytest
import scipy.sparse as sp

import ztensor_c

DENSE = np.array([[0, 2, 0, 0], [1, 0, 0, 3], [0, 0, 0, 0]], np.float32)


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "sparse.zt"
    with ztensor_c.Writer(path, version="1.2") as w:
        w.add("csr", sp.csr_array(DENSE), compress=True)
        w.add("coo", sp.coo_array(DENSE))
        w.add("csr_matrix", sp.csr_matrix(DENSE.astype(np.int64)))
        w.add("half", sp.csr_array(DENSE), checksum="crc32c")
    return path


def test_written_as_the_formats_components(model):
    r = ztensor_c.Reader(model)
    m = r.metadata("csr")
    assert m.format == "sparse_csr" and m.shape == [3, 4] and m.dtype == "float32"
    assert sorted(m.components) == ["indices", "indptr", "values"]
    assert m.components["indices"]["dtype"] == "uint64"
    c = r.metadata("coo")
    assert c.format == "sparse_coo" and sorted(c.components) == ["coords", "values"]
    np.testing.assert_array_equal(r.tensor("coo", "coords").numpy(), [0, 1, 1, 1, 0, 3])
    for name in r.keys():
        r.validate(name)


def test_scipy_arrays(model):
    r = ztensor_c.Reader(model)
    csr = r["csr"]
    assert isinstance(csr, sp.csr_array) and csr.shape == (3, 4)
    np.testing.assert_array_equal(csr.toarray(), DENSE)
    coo = r["coo"]
    assert isinstance(coo, sp.coo_array)
    np.testing.assert_array_equal(coo.toarray(), DENSE)
    np.testing.assert_array_equal(r["csr_matrix"].toarray(), DENSE.astype(np.int64))


def test_tuples_without_scipy(model, no_scipy):
    r = ztensor_c.Reader(model)
    data, indices, indptr = r["csr"]
    np.testing.assert_array_equal(data, [2, 1, 3])
    np.testing.assert_array_equal(indices, [1, 0, 3])
    np.testing.assert_array_equal(indptr, [0, 1, 3, 3])
    assert indices.dtype == np.uint64
    values, coords = r["coo"]
    np.testing.assert_array_equal(values, [2, 1, 3])
    np.testing.assert_array_equal(coords, [[0, 1, 1], [1, 0, 3]])


def test_legacy_and_reference_sparse(vectors):
    """Legacy v0.1 sparse tensors (which the reference 1.2.3 reader drops) read as SciPy."""
    for stem in ("v01_rust_sparse_csr", "v01_rust_sparse_coo", "v01_handmade_sparse_csr"):
        r = ztensor_c.Reader(vectors / "reference" / f"{stem}.zt")
        sparse = [n for n in r.keys() if r.metadata(n).format.startswith("sparse_")]
        assert sparse, stem
        for name in sparse:
            value = r[name]
            assert sp.issparse(value), (stem, name)
            assert value.shape == tuple(r.metadata(name).shape)
