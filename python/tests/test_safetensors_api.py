"""safetensors' API (numpy.load_file/save_file/load/save, safe_open) against the
safetensors package itself, on its own files and on ours."""

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy as st_numpy

import ztensor_c
import ztensor_c.numpy as zt_numpy
from conftest import values


def sample():
    return {
        "embed": values(48, "float32").reshape(6, 8),
        "bias": values(8, "float64", 1),
        "ids": values(10, "int64", 2),
        "mask": values(5, "bool", 3),
        "half": values(12, "float16", 4).reshape(3, 4),
        "bf16": values(6, "float32", 5).astype(ml_dtypes.bfloat16).reshape(2, 3),
        "small": values(7, "uint8", 6),
        "scalar": np.array(3.5, np.float32),
        "empty": np.zeros((0, 4), np.int32),
    }


def assert_same(ours, theirs):
    assert list(ours) == list(theirs) or sorted(ours) == sorted(theirs)
    for k in theirs:
        assert ours[k].dtype == theirs[k].dtype, k
        assert ours[k].shape == theirs[k].shape, k
        assert ours[k].tobytes() == theirs[k].tobytes(), k


def test_load_file_of_a_safetensors_file_equals_safetensors(tmp_path):
    path = tmp_path / "m.safetensors"
    st_numpy.save_file(sample(), path, metadata={"step": "7", "name": "tiny"})
    theirs = st_numpy.load_file(path)
    ours = zt_numpy.load_file(path)
    assert_same(ours, theirs)
    assert ztensor_c.Reader(path).attributes == {"step": "7", "name": "tiny"}
    with open(path, "rb") as f:
        assert_same(zt_numpy.load(f.read()), theirs)


@pytest.mark.parametrize("compress", [None, True])
def test_save_file_then_load_file(tmp_path, compress):
    path = tmp_path / "m.zt"
    zt_numpy.save_file(sample(), path, metadata={"step": "7"}, compress=compress, checksum="xxh3")
    loaded = zt_numpy.load_file(path)
    assert sorted(loaded) == sorted(sample())  # (zTensor v2 and safetensors keep names sorted)
    assert_same(loaded, sample())
    r = ztensor_c.Reader(path)
    assert r.attributes == {"step": "7"}
    r.verify()
    copies = zt_numpy.load_file(path, copy=True)
    assert all(a.flags.writeable and a.flags.owndata for a in copies.values())
    assert_same(copies, sample())


def test_save_and_load_bytes():
    data = zt_numpy.save(sample(), metadata={"k": "v"})
    assert data == st_numpy.save(sample(), metadata={"k": "v"})  # the bytes safetensors' save gives
    loaded = zt_numpy.load(data)
    assert_same(loaded, sample())
    assert not loaded["embed"].flags.owndata  # views of the loaded bytes' aligned copy
    loaded["embed"][0, 0] = 5  # which is ours: writable
    del data
    np.testing.assert_array_equal(loaded["ids"], sample()["ids"])


def test_save_file_refuses_what_safetensors_refuses(tmp_path):
    with pytest.raises(ValueError):
        zt_numpy.save_file([np.ones(2)], tmp_path / "x.zt")
    with pytest.raises(ValueError, match="np.ndarray"):
        zt_numpy.save_file({"a": [1, 2]}, tmp_path / "x.zt")
    assert not (tmp_path / "x.zt").exists()


def test_safe_open_matches_safetensors(tmp_path):
    path = tmp_path / "m.safetensors"
    st_numpy.save_file(sample(), path, metadata={"format": "np"})
    with safetensors.safe_open(path, framework="np") as theirs, \
            ztensor_c.safe_open(path, framework="np") as ours:
        assert ours.keys() == theirs.keys()
        assert ours.offset_keys() == theirs.offset_keys()
        assert ours.metadata() == theirs.metadata()
        every, every_theirs = ours.get_tensors(), theirs.get_tensors()
        assert list(every) == list(every_theirs)  # the same names, in the same order
        assert all(every[k].tobytes() == every_theirs[k].tobytes() for k in every)
        assert set(n for n in dir(theirs) if not n.startswith("_")) <= set(dir(ours))
        for k in theirs.keys():
            a, b = ours.get_tensor(k), theirs.get_tensor(k)
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes(), k
            sa, sb = ours.get_slice(k), theirs.get_slice(k)
            assert sa.get_shape() == sb.get_shape()
            assert sa.get_dtype() == sb.get_dtype()
        for key in [np.s_[1:3], np.s_[1:5, 2:4], np.s_[:, 3], np.s_[4:, ::3], np.s_[4],
                    np.s_[..., 1], np.s_[::2, 1:7:2], np.s_[5], np.s_[:0]]:
            a = ours.get_slice("embed")[key]
            b = theirs.get_slice("embed")[key]
            np.testing.assert_array_equal(a, b, err_msg=str(key))
            assert a.shape == b.shape == theirs.get_tensor("embed")[key].shape, key


@pytest.mark.parametrize("options", [{}, {"compress": True}, {"compress": 1}])
def test_get_slice_range_reads_of_compressed_tensors(tmp_path, options):
    """Rows of a zstd tensor come from the frames holding them (the library's range
    read); the values equal slicing the whole tensor."""
    a = np.arange(3 * 1024 * 1024, dtype=np.float32).reshape(3072, 1024)  # 12 MiB: 3 frames
    path = tmp_path / "big.zt"
    with ztensor_c.Writer(path) as w:
        w.add("a", a, **options)
    with ztensor_c.safe_open(path, framework="np") as f:
        s = f.get_slice("a")
        for key in [np.s_[0:2], np.s_[1500:1502, 10:20], np.s_[3071], np.s_[-1, 1019:], np.s_[1000:3000:500, ::256]]:
            np.testing.assert_array_equal(s[key], a[key], err_msg=str(key))
    r = ztensor_c.Reader(path, mmap=False)  # pread: never a view, always a range read
    with ztensor_c.safe_open(path, framework="np") as f:
        np.testing.assert_array_equal(f.get_slice("a")[2000:2001], a[2000:2001])
    del r


def test_safe_open_errors(tmp_path):
    path = tmp_path / "m.zt"
    zt_numpy.save_file({"a": np.ones((2, 2))}, path)
    with pytest.raises(ValueError, match="framework"):
        ztensor_c.safe_open(path, framework="flax")
    with ztensor_c.safe_open(path, framework="numpy") as f:
        with pytest.raises(KeyError):
            f.get_tensor("b")
        with pytest.raises(ztensor_c.SafetensorError, match="out of bounds"):  # as safetensors' NumPy slicer
            f.get_slice("a")[2]
        with pytest.raises(ztensor_c.SafetensorError, match="more slicing indexes"):
            f.get_slice("a")[0, 0, 0]
        assert f.metadata() is None
        assert f.offset_keys() == ["a"]
    with pytest.raises(ValueError, match="closed"):
        f.keys()
    with pytest.raises(FileNotFoundError):
        ztensor_c.safe_open(tmp_path / "none.safetensors", framework="np")


def test_metadata_is_safetensors(tmp_path, vectors):
    """safe_open(...).metadata() is dict[str, str] (or None), as safetensors'; save_file's
    metadata is refused with safetensors' TypeError unless it is that; typed values stay
    available through attributes() and Reader.attributes (issue 38 item 5)."""
    st = tmp_path / "m.safetensors"
    st_numpy.save_file(sample(), str(st), metadata={"step": "7", "name": "tiny"})
    with safetensors.safe_open(str(st), "np") as theirs, ztensor_c.safe_open(st, "np") as ours:
        assert ours.metadata() == theirs.metadata() == {"step": "7", "name": "tiny"}
    plain = tmp_path / "plain.safetensors"
    st_numpy.save_file(sample(), str(plain))
    with safetensors.safe_open(str(plain), "np") as theirs, ztensor_c.safe_open(plain, "np") as ours:
        assert ours.metadata() is theirs.metadata() is None
    # typed attributes of our own files: text for safe_open, typed for the rest
    typed = tmp_path / "typed.zt"
    with ztensor_c.Writer(typed) as w:
        w.add("x", np.zeros(2, np.float32))
        w.set_attributes({"n": 3, "ids": [1, 2], "name": "m", "on": True, "f": 0.5})
    with ztensor_c.safe_open(typed, "np") as f:
        md = f.metadata()
        assert md == {"n": "3", "ids": "[1, 2]", "name": "m", "on": "true", "f": "0.5"}
        assert all(type(k) is str and type(v) is str for k, v in md.items())
        assert f.attributes()["n"] == 3 and list(f.attributes()["ids"]) == [1, 2]
    assert ztensor_c.Reader(typed).attributes["on"] is True
    # GGUF key/values: every value as text
    gguf = vectors / "gguf" / "llama_tiny.gguf"
    with ztensor_c.safe_open(gguf, "np") as f:
        md = f.metadata()
        assert md and all(type(k) is str and type(v) is str for k, v in md.items())
        typed_gguf = f.attributes()
        assert md["general.architecture"] == typed_gguf["general.architecture"]
        count = typed_gguf["llama.block_count"]
        assert isinstance(count, int) and md["llama.block_count"] == str(count)
    # save_file / save refuse what safetensors refuses, with its type and message
    for bad in ({"a": 1}, {1: "a"}, {"a": ["x"]}, {"a": None}, "text", [("a", "b")]):
        with pytest.raises(TypeError) as theirs:
            st_numpy.save_file({"x": np.zeros(2)}, str(tmp_path / "t.safetensors"), metadata=bad)
        for save in (lambda: zt_numpy.save_file({"x": np.zeros(2)}, tmp_path / "o", metadata=bad),
                     lambda: zt_numpy.save({"x": np.zeros(2)}, metadata=bad)):
            with pytest.raises(TypeError) as ours:
                save()
            assert str(ours.value) == str(theirs.value), bad
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("framework", ["np", "pt"])
def test_get_tensor_of_every_name_equals_the_reader(tmp_path, framework):
    """After enough get_tensor calls safe_open answers from one plan of every object (a
    view per call): the values are the Reader's, for raw, compressed and bf16 tensors, on
    a safetensors file and a zTensor one."""
    if framework == "pt":
        pytest.importorskip("torch", reason="torch is not installed")
    tensors = {f"t{i:03d}": values(12, ("float32", "int8", "float16")[i % 3], i).reshape(3, 4) for i in range(120)}
    tensors["bf"] = values(6, "float32", 9).astype(ml_dtypes.bfloat16).reshape(2, 3)
    st = tmp_path / "m.safetensors"
    st_numpy.save_file(tensors, str(st))
    zt = tmp_path / "m.zt"
    with ztensor_c.Writer(zt) as w:
        for i, (name, a) in enumerate(tensors.items()):
            w.add(name, a, compress=i % 7 == 0)
    for path in (st, zt):
        with ztensor_c.safe_open(path, framework) as f:
            for _round in range(2):
                for name, a in tensors.items():
                    got = f.get_tensor(name)
                    if framework == "pt":
                        import torch

                        got = got.view(torch.int16).numpy().view(a.dtype) if got.dtype == torch.bfloat16 else got.numpy()
                    assert got.dtype == a.dtype and got.shape == a.shape, (path.name, name)
                    assert got.tobytes() == a.tobytes(), (path.name, name)
            assert f._fast, "the plan was made"
