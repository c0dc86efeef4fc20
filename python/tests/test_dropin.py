"""ztensor_c as a drop-in for the safetensors package (issue 38 item 2): every public
name of `safetensors` and `safetensors.torch` is there, storage_ptr / storage_size answer
as safetensors.torch's, deserialize as safetensors', safe_open takes `backend`, and
SafetensorError is the base class of every error. test_transformers.py runs transformers
itself through the stand-ins."""

import numpy as np
import pytest
import safetensors
import safetensors.numpy as st_numpy

import ztensor_c
import ztensor_c.numpy

PUBLIC = ["safe_open", "SafetensorError", "serialize", "serialize_file", "deserialize", "TensorSpec",
          "__version__"]
PUBLIC_TORCH = ["storage_ptr", "storage_size", "save_file", "load_file", "save", "load", "save_model",
                "load_model"]


def public(module):
    """A module's names a user reaches (typing's aliases and `sys`, which safetensors'
    modules import at their top, left out)."""
    return {n for n in dir(module) if not n.startswith("_")} - {
        "Any", "Dict", "List", "Optional", "Set", "Tuple", "Union", "sys", "os", "np", "torch"}


def test_every_public_name_is_there():
    for name in PUBLIC:
        assert hasattr(safetensors, name) and hasattr(ztensor_c, name), name
    assert public(safetensors) - public(ztensor_c) == set()
    assert public(st_numpy) - public(ztensor_c.numpy) == set()
    torch = pytest.importorskip("torch", reason="torch is not installed: safetensors.torch's names skip")
    import safetensors.torch as st_torch

    import ztensor_c.torch as zt_torch

    assert torch
    for name in PUBLIC_TORCH:
        assert hasattr(st_torch, name) and callable(getattr(zt_torch, name)), name
    assert public(st_torch) - public(zt_torch) == set()


def test_storage_ptr_and_size_as_safetensors(torch):
    import safetensors.torch as st_torch

    import ztensor_c.torch as zt_torch

    base = torch.arange(24, dtype=torch.float32)
    cases = [base, base[3:9], base.view(4, 6).T, base.view(4, 6)[1], torch.zeros(0),
             torch.empty(3, 4, device="meta"), torch.ones(2, dtype=torch.bfloat16)]
    for t in cases:
        assert zt_torch.storage_ptr(t) == st_torch.storage_ptr(t)
        assert zt_torch.storage_size(t) == st_torch.storage_size(t)
    assert zt_torch.storage_ptr(base[3:9]) == zt_torch.storage_ptr(base)  # one storage: tied


def test_deserialize_as_safetensors(tmp_path):
    tensors = {"b": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.array(5, np.int8),
               "h": np.ones(4, np.float16), "e": np.zeros((0, 2), np.int64)}
    st_numpy.save_file(tensors, str(tmp_path / "t.safetensors"), metadata={"k": "v"})
    data = (tmp_path / "t.safetensors").read_bytes()
    # safetensors lists them in no fixed order (a hash map's); ours sorted by name
    assert ztensor_c.deserialize(data) == sorted(safetensors.deserialize(data))
    with pytest.raises(ztensor_c.SafetensorError):
        ztensor_c.deserialize(b"garbage!garbage!")


def test_serialize_writes_safetensors_as_safetensors(tmp_path):
    a, b = np.arange(6, dtype=np.float32), np.array([5], np.int8)
    specs = {"b": ztensor_c.TensorSpec(dtype="float32", shape=[2, 3], data_ptr=a.ctypes.data, data_len=24),
             "a": ztensor_c.TensorSpec(dtype="int8", shape=[], data_ptr=b.ctypes.data, data_len=1)}
    assert repr(specs["b"]) == repr(safetensors.TensorSpec(dtype="float32", shape=[2, 3],
                                                           data_ptr=a.ctypes.data, data_len=24))
    for bad in ("float128", "I8", "F32", "complex128"):  # torch's names only, as safetensors
        with pytest.raises(ztensor_c.SafetensorError) as ours:
            ztensor_c.TensorSpec(dtype=bad, shape=[1], data_ptr=0, data_len=0)
        with pytest.raises(safetensors.SafetensorError) as theirs:
            safetensors.TensorSpec(dtype=bad, shape=[1], data_ptr=0, data_len=0)
        assert str(ours.value) == str(theirs.value)
    theirs_specs = {k: safetensors.TensorSpec(dtype="int8" if k == "a" else "float32", shape=s.shape,
                                              data_ptr=s.data_ptr, data_len=s.data_len) for k, s in specs.items()}
    assert ztensor_c.serialize(specs, metadata={"k": "v"}) == safetensors.serialize(theirs_specs, metadata={"k": "v"})
    ztensor_c.serialize_file(specs, tmp_path / "x.safetensors", metadata={"k": "v"})
    assert (tmp_path / "x.safetensors").read_bytes() == safetensors.serialize(theirs_specs, metadata={"k": "v"})


def test_backend_as_safetensors(tmp_path):
    path = tmp_path / "t.safetensors"
    st_numpy.save_file({"w": np.arange(4, dtype=np.float32)}, str(path))
    with ztensor_c.safe_open(path, "np", backend="mmap") as f:
        assert not f.get_tensor("w").flags.owndata  # a view of the mapping
    with ztensor_c.safe_open(path, "np", backend="pread") as f:
        w = f.get_tensor("w")
        assert w.flags.owndata and w.tolist() == [0, 1, 2, 3]  # read into memory of its own
    for bad, error in (("auto", "SafetensorError"), ("x", "SafetensorError"), (None, "TypeError"),
                       (3, "TypeError")):
        with pytest.raises(Exception) as ours:
            ztensor_c.safe_open(path, "np", backend=bad)
        with pytest.raises(Exception) as theirs:
            safetensors.safe_open(str(path), "np", backend=bad)
        assert type(ours.value).__name__ == type(theirs.value).__name__ == error
        assert str(ours.value) == str(theirs.value)


def test_safetensor_error_is_the_base_of_every_error(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"garbage!garbage!garbage!")
    for fn in (lambda: ztensor_c.safe_open(bad, "np"),
               lambda: ztensor_c.safe_open(tmp_path / "missing.safetensors", "np"),
               lambda: ztensor_c.numpy.load_file(bad)):
        with pytest.raises(ztensor_c.SafetensorError):
            fn()
    good = tmp_path / "good.safetensors"
    st_numpy.save_file({"w": np.zeros(2, np.float32)}, str(good))
    with ztensor_c.safe_open(good, "np") as f:
        with pytest.raises(ztensor_c.SafetensorError) as e:
            f.get_tensor("nope")
        assert isinstance(e.value, KeyError)  # and what Python code expects
    for cls in (ztensor_c.FormatError, ztensor_c.NotFoundError, ztensor_c.ZtOSError, ztensor_c.ChecksumError,
                ztensor_c.StateError, ztensor_c.UnsupportedError, ztensor_c.ZtError):
        assert issubclass(cls, ztensor_c.SafetensorError), cls
