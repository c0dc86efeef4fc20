"""0-d results of every dtype through every API (issue 38 item 3): a 0-d tensor read
whole, and a 0-d result cut from a 2-D tensor by get_slice(name)[i, j]; the same value
and dtype from each, raw (views of the mapping) and compressed (decoded copies). Before,
a bf16 one failed in torch ("Changing the dtype of a 0d array is only supported if the
itemsize is unchanged").
"""

import ml_dtypes
import numpy as np
import pytest

import ztensor_c
import ztensor_c.numpy as zt_numpy

DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint64", "uint32", "uint16", "uint8", "bool", "float8_e4m3fn", "float8_e5m2",
          "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "complex64", "complex128"]


def np_dtype(name):
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) and name not in (
        "int8", "uint8") and name.startswith(("bfloat", "float8")) else np.dtype(name)


def ml(name):
    """Whether the dtype is ml_dtypes' (bf16, fp8), not NumPy's own."""
    return name.startswith(("bfloat", "float8"))


def scalar(name):
    dt = np_dtype(name)
    if dt.kind == "b":
        return np.array(True)
    if dt.kind == "c":
        return np.array(1.5 - 2j, dt)
    if dt.kind in "iu":
        return np.array(-7 if dt.kind == "i" else 7, dt)
    return np.array(2.0 if name == "float8_e8m0fnu" else -1.5, np.float32).astype(dt)


def matrix(name):
    """A 2-D tensor whose [1, 2] is scalar(name)."""
    dt = np_dtype(name)
    m = np.zeros((3, 4), dt) if dt.kind != "V" else np.zeros((3, 4), np.float32).astype(dt)
    if name == "float8_e8m0fnu":
        m = np.ones((3, 4), np.float32).astype(dt)
    m[1, 2] = scalar(name)
    return m


@pytest.fixture(scope="module", params=["raw", "zstd"])
def path(request, tmp_path_factory):
    p = tmp_path_factory.mktemp("zero_d") / f"{request.param}.zt"
    with ztensor_c.Writer(p) as w:
        for name in DTYPES:
            w.add(f"s.{name}", scalar(name), compress=request.param == "zstd")
            w.add(f"m.{name}", matrix(name), compress=request.param == "zstd")
    return p


def same(got, want, what):
    got = np.asarray(got)
    assert got.shape == () and got.dtype == want.dtype, (what, got.shape, got.dtype, want.dtype)
    assert got.tobytes() == want.tobytes(), what


def numpy_ways(path, name):
    """(what, 0-d array) of every NumPy way to get the 0-d tensor `s.<name>`, and the
    0-d results cut from `m.<name>`."""
    r = ztensor_c.Reader(path)
    s, m = f"s.{name}", f"m.{name}"
    with ztensor_c.safe_open(path, "np") as f:
        yield "safe_open get_tensor", f.get_tensor(s)
        yield "safe_open get_slice[...]", f.get_slice(s)[...]
        yield "safe_open get_slice[()]", f.get_slice(s)[()]
        yield "safe_open get_slice[1, 2]", f.get_slice(m)[1, 2]
        yield "safe_open get_slice[1][2]", f.get_slice(m)[1:2, 2:3][0, 0]
    yield "Reader[]", r[s]
    yield "read_numpy", r.read_numpy(s)
    yield "read_numpy copy", r.read_numpy(s, copy=True)
    yield "read_tensors", r.read_tensors([s])[s]
    yield "read", r.read(s)
    yield "Tensor.numpy", r.tensor(s).numpy()
    if not ml(name):  # NumPy's DLPack import knows no bf16/fp8 type code (it fails)
        yield "np.from_dlpack", np.from_dlpack(r.tensor(s))
    yield "np.asarray(Tensor)", np.asarray(r.tensor(s))
    yield "numpy.load_file", zt_numpy.load_file(path)[s]
    yield "numpy.load_file copy", zt_numpy.load_file(path, copy=True)[s]
    yield "numpy.load", zt_numpy.load(path.read_bytes())[s]


@pytest.mark.parametrize("name", DTYPES)
def test_numpy(path, name):
    want = scalar(name)
    n = 0
    for what, got in numpy_ways(path, name):
        same(got, want, what)
        n += 1
    assert n == 16 - ml(name)


def torch_ways(path, name, torch):
    import ztensor_c.torch as zt_torch

    r = ztensor_c.Reader(path)
    s, m = f"s.{name}", f"m.{name}"
    with ztensor_c.safe_open(path, "pt") as f:
        yield "safe_open get_tensor", f.get_tensor(s)
        yield "safe_open get_slice[...]", f.get_slice(s)[...]
        yield "safe_open get_slice[1, 2]", f.get_slice(m)[1, 2]
        yield "safe_open get_slice[1, 2] of a row", f.get_slice(m)[1][2]
    yield "read_torch", r.read_torch(s)
    yield "read_torch copy", r.read_torch(s, copy=True)
    yield "torch.load_file", zt_torch.load_file(path)[s]
    yield "torch.load", zt_torch.load(path.read_bytes())[s]
    yield "torch.from_dlpack(Tensor)", torch.from_dlpack(r.tensor(s))
    if not ml(name):  # torch.from_numpy takes NumPy's own dtypes only
        yield "torch.from_numpy", torch.from_numpy(zt_numpy.load_file(path)[s])


def torch_bytes(t, torch):
    t = t.detach().cpu()
    if t.dtype == torch.bool:
        return t.numpy().tobytes()
    width = t.element_size()
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    if t.is_complex():
        return t.numpy().tobytes()
    return t.reshape(1).view(as_int[width]).numpy().tobytes()


@pytest.mark.parametrize("name", DTYPES)
def test_torch(path, name, torch):
    want = scalar(name)
    import ztensor_c._torch as _torch
    from ztensor_c import _dtypes

    code, logical = _dtypes.from_numpy(want.dtype)
    dtype = _torch.torch_dtype(code, logical)
    if dtype is None:
        pytest.skip(f"torch {torch.__version__} has no {name}")
    n = 0
    for what, got in torch_ways(path, name, torch):
        assert tuple(got.shape) == () and got.dtype == dtype, (what, got.shape, got.dtype)
        assert torch_bytes(got, torch) == want.tobytes(), what
        n += 1
    assert n == 10 - ml(name)
