"""save_file / save (numpy and torch), serialize and the Writer write safetensors through
the library's safetensors writer: byte for byte what the pinned safetensors package writes
for the same tensors and metadata, whatever the file's extension (as safetensors' own
save_file, which writes safetensors to any path)."""

import json

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy as st_numpy

import ztensor_c
import ztensor_c.numpy as zt_numpy
from conftest import values

# every dtype safetensors.numpy names, in shapes that matter: 0-d, empty, odd sizes
NUMPY = {
    "f64": values(5, "float64", 1),
    "f32": values(24, "float32", 2).reshape(2, 3, 4),
    "f16": values(7, "float16", 3),
    "bf16": values(6, "float32", 4).astype(ml_dtypes.bfloat16).reshape(3, 2),
    "i64": values(3, "int64", 5),
    "u64": values(3, "uint64", 6),
    "i32": values(4, "int32", 7),
    "u32": values(4, "uint32", 8),
    "i16": values(9, "int16", 9),
    "u16": values(9, "uint16", 10),
    "i8": values(11, "int8", 11),
    "u8": values(13, "uint8", 12),
    "bool": values(3, "bool", 13),
    "c64": values(2, "complex64", 14),
    "scalar": np.array(2.5, np.float32),
    "empty": np.zeros((0, 3), np.int32),
    "a.b.c": np.arange(4, dtype=np.float32),  # names as a model's
}

METADATA = [None, {"format": "np"}, {"format": "pt", "note": "x" * 100, "é": "ü"},
            {}]  # an empty dict: "__metadata__":{}, as safetensors writes it


def header(data):
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + n]), data[8 + n:]


def assert_safetensors_bytes(ours, theirs, metadata):
    """Byte for byte, but for the order of __metadata__'s keys, which safetensors takes
    from a hash map (random for more than one key; ours: the order given)."""
    if metadata is None or len(metadata) <= 1:
        assert ours == theirs
    else:
        assert len(ours) == len(theirs)
        assert header(ours) == header(theirs)
        assert list(header(ours)[0]["__metadata__"]) == list(metadata)


@pytest.mark.parametrize("metadata", METADATA, ids=["none", "one", "three", "empty"])
@pytest.mark.parametrize("suffix", [".safetensors", ".zt", ""])
def test_numpy_save_file_is_safetensors_byte_for_byte(tmp_path, metadata, suffix):
    ours, theirs = tmp_path / f"ours{suffix}", tmp_path / "theirs.safetensors"
    zt_numpy.save_file(NUMPY, ours, metadata=metadata)
    st_numpy.save_file(NUMPY, str(theirs), metadata=metadata)
    assert_safetensors_bytes(ours.read_bytes(), theirs.read_bytes(), metadata)
    assert_safetensors_bytes(zt_numpy.save(NUMPY, metadata=metadata), theirs.read_bytes(), metadata)
    back = st_numpy.load_file(str(ours))  # read by safetensors itself
    for name, want in NUMPY.items():
        assert back[name].dtype == want.dtype and back[name].shape == want.shape, name
        assert back[name].tobytes() == want.tobytes(), name


@pytest.mark.parametrize("name, array", [(k, v) for k, v in NUMPY.items()], ids=list(NUMPY))
def test_one_tensor_of_each_dtype(tmp_path, name, array):
    assert zt_numpy.save({name: array}) == st_numpy.save({name: array})


def test_zt_options_write_ztensor(tmp_path):
    """compress= and checksum= are ours: safetensors holds neither, so they write zTensor v2."""
    path = tmp_path / "c.safetensors"
    zt_numpy.save_file({"a": np.zeros(1000, np.float32)}, path, compress=True)
    assert ztensor_c.Reader(path).format == "zt"
    with pytest.raises(Exception):
        st_numpy.load_file(str(path))


@pytest.mark.parametrize("path, fmt, want", [
    ("w.safetensors", None, "safetensors"),  # by the extension
    ("w.zt", None, "zt"),
    ("w.bin", "safetensors", "safetensors"),
    ("w.safetensors", "zt", "zt"),
])
def test_writer_by_extension_or_format(tmp_path, path, fmt, want):
    tensors = {"b": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.array([1, 2], np.int8)}
    with ztensor_c.Writer(tmp_path / path, format=fmt) as w:
        for k, v in tensors.items():
            w.add(k, v)
        w.set_attributes({"format": "np"})
    assert ztensor_c.Reader(tmp_path / path).format == want
    if want == "safetensors":
        assert (tmp_path / path).read_bytes() == st_numpy.save(tensors, metadata={"format": "np"})


def test_what_safetensors_cannot_hold_is_refused(tmp_path):
    with pytest.raises(ztensor_c.SafetensorError):
        with ztensor_c.Writer(tmp_path / "x.safetensors") as w:
            w.set_attributes({"n": 3})  # safetensors' metadata is str: str
    assert not (tmp_path / "x.safetensors").exists()
    with pytest.raises(ValueError, match="format is one of"):
        ztensor_c.Writer(tmp_path / "y", format="onnx")


def test_torch_save_file_is_safetensors_byte_for_byte(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch case skips")
    import safetensors.torch as st_torch
    import ztensor_c.torch as zt_torch

    g = torch.Generator().manual_seed(0)
    tensors = {
        "f64": torch.randn(3, generator=g, dtype=torch.float64),
        "f32": torch.randn(2, 5, generator=g),
        "f16": torch.randn(7, generator=g).half(),
        "bf16": torch.randn(4, 3, generator=g).bfloat16(),
        "e4m3": torch.randn(5, generator=g).to(torch.float8_e4m3fn),
        "e5m2": torch.randn(5, generator=g).to(torch.float8_e5m2),
        "i64": torch.arange(-3, 3),
        "i32": torch.arange(5, dtype=torch.int32),
        "i16": torch.arange(5, dtype=torch.int16),
        "i8": torch.arange(-5, 5, dtype=torch.int8),
        "u8": torch.arange(9, dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "c64": torch.randn(2, generator=g, dtype=torch.complex64),
        "scalar": torch.tensor(1.5),
        "empty": torch.zeros(0, 2),
    }
    for meta in (None, {"format": "pt"}):
        ours, theirs = tmp_path / "ours.bin", tmp_path / "theirs.safetensors"
        zt_torch.save_file(tensors, ours, metadata=meta)
        st_torch.save_file(tensors, str(theirs), metadata=meta)
        assert ours.read_bytes() == theirs.read_bytes()
        assert zt_torch.save(tensors, metadata=meta) == theirs.read_bytes()
        back = st_torch.load_file(str(ours))
        for k, v in tensors.items():
            assert back[k].dtype == v.dtype and back[k].shape == v.shape, k
            assert torch.equal(back[k].reshape(-1).view(torch.uint8), v.reshape(-1).view(torch.uint8)), k
