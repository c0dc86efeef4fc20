"""numpy.load_file and torch.load_file: what they build from a file's columns (the plan)
equals what the Reader gives tensor by tensor, on files that take the one-call path
(every object dense and raw, one mapping) and on files that don't."""

import gc
import sys

import ml_dtypes
import numpy as np
import pytest
import scipy.sparse as sp

import ztensor_c
import ztensor_c.numpy as zt_numpy
from ztensor_c import _lib
from ztensor_c._lib import ffi

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")

DENSE_RAW = {
    "scalar": np.array(2.5, np.float32),
    "empty": np.zeros((0,), np.float32),
    "empty2": np.zeros((0, 3), np.int16),
    "vector": np.arange(7, dtype=np.int64),
    "matrix": np.arange(12, dtype=np.float32).reshape(3, 4) - 5,
    "cube": np.arange(24, dtype=np.uint8).reshape(2, 3, 4),
    "rank5": np.arange(32, dtype=np.int32).reshape(2, 2, 2, 2, 2),
    "bf16": np.array([[1, 2], [3, -4]], np.float32).astype(ml_dtypes.bfloat16),
    "fp8": np.array([0.5, -2.0], np.float32).astype(ml_dtypes.float8_e4m3fn),
    "c64": np.array([[1 + 2j, 3 - 4j]], np.complex64),
    "flags": np.array([True, False, True]),
    "last": np.arange(5, dtype=np.float64),
}


def write(path, tensors, compress=(), sparse=None):
    with ztensor_c.Writer(path, version="1.2") as w:
        for name, value in tensors.items():
            w.add(name, value, compress=name in compress)
        for name, value in (sparse or {}).items():
            w.add(name, value)
    return path


def assert_same_arrays(got, want):
    assert list(got) == list(want)  # every name, in file order
    for name, w in want.items():
        g = got[name]
        if sp.issparse(w):
            assert sp.issparse(g) and g.format == w.format, name
            np.testing.assert_array_equal(g.toarray(), w.toarray())
            continue
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, g.shape, w.dtype, w.shape)
        assert g.tobytes() == w.tobytes(), name


def test_one_call_path_equals_the_reader(tmp_path):
    path = write(tmp_path / "raw.zt", DENSE_RAW)
    got = zt_numpy.load_file(path)
    assert_same_arrays(got, DENSE_RAW)
    r = ztensor_c.Reader(path)
    assert_same_arrays(got, {name: r[name] for name in r.keys()})
    assert_same_arrays(r.read_tensors(["last", "cube", "scalar"]),
                       {k: DENSE_RAW[k] for k in ("scalar", "cube", "last")})
    # runs of objects apart, with more dimensions than two per object (the plan asks the
    # library how many, then reads them)
    assert_same_arrays(r.read_tensors(["rank5", "empty", "cube"]),
                       {k: DENSE_RAW[k] for k in ("empty", "cube", "rank5")})
    assert_same_arrays(r.read_tensors(["rank5"]), {"rank5": DENSE_RAW["rank5"]})


def test_mixed_file_equals_the_reader(tmp_path):
    dense = dict(DENSE_RAW)
    csr = sp.csr_array(np.array([[0, 2, 0], [1, 0, 3]], np.float32))
    path = write(tmp_path / "mixed.zt", dense, compress={"matrix", "cube", "bf16"}, sparse={"csr": csr})
    want = dict(dense, csr=csr)
    got = zt_numpy.load_file(path)
    assert_same_arrays(got, want)
    assert got["matrix"].flags.writeable and got["matrix"].flags.owndata  # decoded: its own
    assert not got["vector"].flags.owndata  # raw: a view (of the copy-on-write mapping)
    copies = zt_numpy.load_file(path, copy=True)
    assert_same_arrays(copies, want)
    assert all(a.flags.writeable and a.flags.owndata for n, a in copies.items() if n != "csr")


def write_packed(path):
    """DENSE_RAW and two packed fp4 tensors (two values a byte): a shape of (4,) and one of
    (2, 4) over 2 and 4 bytes, which NumPy has no dtype for: they come back as their
    bytes, one dimension."""
    from ztensor_c._writer import _write_options
    with ztensor_c.Writer(path, version="1.2") as w:
        for name, value in DENSE_RAW.items():
            w.add(name, value)
        options = _write_options(None, "none")
        w._add_raw("fp4", "dense", (4,), [("data", 11, "f4_e2m1fn_x2", np.array([0x21, 0x43], np.uint8))], options)
        w._add_raw("fp4x2", "dense", (2, 4), [("data", 11, "f4_e2m1fn_x2", np.arange(4, dtype=np.uint8))], options)
    return path


def test_packed_types_come_back_as_their_bytes(tmp_path):
    path = write_packed(tmp_path / "packed.zt")
    got = zt_numpy.load_file(path)
    r = ztensor_c.Reader(path)
    assert_same_arrays(got, {name: r[name] for name in r.keys()})
    assert got["fp4"].shape == (2,) and got["fp4"].dtype.names == ("f4_e2m1fn_x2",)
    assert got["fp4"].tobytes() == bytes([0x21, 0x43])
    assert got["fp4x2"].shape == (4,) and got["fp4x2"].tobytes() == bytes(range(4))
    assert_same_arrays({k: got[k] for k in DENSE_RAW}, DENSE_RAW)


@linux_only
def test_safetensors_file_views_its_mapping(tmp_path):
    import safetensors.numpy as st_numpy
    tensors = {k: v for k, v in DENSE_RAW.items() if k not in ("fp8", "c64")}
    tensors["bf16"] = DENSE_RAW["matrix"]
    path = tmp_path / "m.safetensors"
    st_numpy.save_file(tensors, str(path))
    got = zt_numpy.load_file(path)
    want = st_numpy.load_file(str(path))
    assert sorted(got) == sorted(want)
    assert_same_arrays({k: got[k] for k in want}, want)
    maps = _mappings_of(path)
    assert len(maps) == 1
    start = int(maps[0].split("-")[0], 16)
    for name, offset in _c_offsets(path).items():  # the file's bytes, no copy
        assert got[name].ctypes.data == start + offset and not got[name].flags.owndata, name


def _c_offsets(path):
    """{name: offset of its data in the file} from the C API."""
    out = ffi.new("zt_reader **")
    _lib.check(_lib.lib.zt_open_with(str(path).encode(), ffi.NULL, out))
    try:
        r = ztensor_c.Reader(path)
        loc = ffi.new("zt_location *")
        offsets = {}
        for i, name in enumerate(r.keys()):
            _lib.check(_lib.lib.zt_component_get_location(out[0], i, 0, loc))
            offsets[name] = loc.offset
        return offsets
    finally:
        _lib.lib.zt_close(out[0])


def _mappings_of(path):
    with open("/proc/self/maps") as f:
        return [line.split()[0] for line in f if line.rstrip().endswith(str(path))]


def _permissions_of(path):
    with open("/proc/self/maps") as f:
        return [line.split()[1] for line in f if line.rstrip().endswith(str(path))]


@linux_only
def test_one_call_arrays_view_the_mapping_copy_on_write(tmp_path):
    path = write(tmp_path / "raw.zt", DENSE_RAW)
    before = path.read_bytes()
    got = zt_numpy.load_file(path)
    maps = _mappings_of(path)
    assert len(maps) == 1
    start, end = (int(x, 16) for x in maps[0].split("-"))
    assert _permissions_of(path) == ["rw-p"]  # private and writable: copy-on-write
    for name, offset in _c_offsets(path).items():
        a = got[name]
        assert a.ctypes.data == start + offset, name  # the file's bytes: no copy
        assert a.flags.writeable and not a.flags.owndata
    m = got["matrix"]
    m[0, 0] = 1234  # this process's page only
    assert got["matrix"][0, 0] == 1234 and path.read_bytes() == before
    assert zt_numpy.load_file(path)["matrix"][0, 0] == DENSE_RAW["matrix"][0, 0]  # another reader
    keep = got["last"]
    del got, m, a
    gc.collect()
    assert _mappings_of(path) == maps  # an array left keeps the file mapped
    assert keep.tolist() == [0, 1, 2, 3, 4]
    del keep
    gc.collect()
    assert _mappings_of(path) == []  # the last one gone: the reader closed


def write_set(directory, compress=()):
    """A set of three or more files under `directory` (made), and what it holds."""
    directory.mkdir(exist_ok=True)
    tensors = {f"t{i}": np.full((64, 16), i, np.float32) for i in range(6)}
    tensors["bias"] = np.arange(3, dtype=np.int16)
    with ztensor_c.Writer(directory / "set.zt", max_shard_size=10_000, version="1.2") as w:
        for name, value in tensors.items():
            w.add(name, value, compress=name in compress)
    index = [p for p in directory.iterdir() if p.name.endswith(".index.json")]
    assert len(index) == 1 and len(list(directory.glob("*.zt"))) > 2
    return index[0], tensors


@linux_only
def test_sharded_set_views_every_shard(tmp_path):
    index, tensors = write_set(tmp_path)
    got = zt_numpy.load_file(index)
    assert_same_arrays(got, tensors)
    r = ztensor_c.Reader(index)
    out = ffi.new("zt_reader **")
    _lib.check(_lib.lib.zt_open_with(str(index).encode(), ffi.NULL, out))
    try:
        loc = ffi.new("zt_location *")
        shards = set()
        for i, name in enumerate(r.keys()):
            _lib.check(_lib.lib.zt_component_get_location(out[0], i, 0, loc))
            path = ffi.string(_shard_path(out[0], loc.shard)).decode()
            maps = _mappings_of(path)
            assert len(maps) == 1, (name, path, maps)  # our reader's mapping of the shard
            start = int(maps[0].split("-")[0], 16)
            assert got[name].ctypes.data == start + loc.offset, name  # no copy
            assert not got[name].flags.owndata
            shards.add(loc.shard)
        assert len(shards) > 1
    finally:
        _lib.lib.zt_close(out[0])
    mixed, _ = write_set(tmp_path / "mixed", compress={"t2"})
    got = zt_numpy.load_file(mixed)
    assert_same_arrays(got, tensors)
    assert got["t2"].flags.owndata and not got["t3"].flags.owndata


def _shard_path(reader, shard):
    path = ffi.new("const char **")
    _lib.check(_lib.lib.zt_shard_get_path(reader, shard, path))
    return path[0]


def test_torch_load_file_equals_numpy(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch cases skip")
    import ztensor_c.torch as zt_torch
    dense = {k: v for k, v in DENSE_RAW.items()}
    packed = zt_torch.load_file(write_packed(tmp_path / "packed.zt"))
    assert packed["fp4"].dtype == torch.uint8 and packed["fp4"].tolist() == [0x21, 0x43]
    assert packed["fp4x2"].dtype == torch.uint8 and packed["fp4x2"].tolist() == [0, 1, 2, 3]
    for compress in ((), {"matrix", "bf16"}):
        path = write(tmp_path / f"t{len(compress)}.zt", dense, compress=compress)
        got = zt_torch.load_file(path)
        assert list(got) == list(dense)
        for name, want in dense.items():
            t = got[name]
            assert tuple(t.shape) == want.shape, name
            assert t.dtype.itemsize == want.dtype.itemsize, name
            raw = t.contiguous().view(torch.uint8) if t.dim() else t.reshape(1).view(torch.uint8)
            assert raw.numpy().tobytes() == want.tobytes(), name
    for compress in ((), {"t2"}):
        index, tensors = write_set(tmp_path / f"set{len(compress)}", compress)
        got = zt_torch.load_file(index)
        assert list(got) == list(tensors)
        for name, want in tensors.items():
            assert got[name].numpy().tobytes() == want.tobytes() and tuple(got[name].shape) == want.shape, name


def test_torch_equals_numpy_where_the_format_does_not_place_bytes(vectors):
    """Tensogram and legacy v0.1 files: torch takes a tensor from the file only where the
    library's view is zero-copy (else decodes it), and gets NumPy's bytes either way."""
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch cases skip")
    import ztensor_c.torch as zt_torch
    files = sorted((vectors / "tensogram").glob("*.tgm")) + sorted((vectors / "reference").glob("v01_*.zt"))
    compared = 0
    for path in files:
        try:
            arrays = zt_numpy.load_file(path)
        except ztensor_c.ZtError:  # vectors of what this build refuses
            continue
        tensors = zt_torch.load_file(path)
        assert list(tensors) == list(arrays), path
        for name, a in arrays.items():
            t = tensors[name]
            if not isinstance(a, np.ndarray) or a.dtype.kind == "V" or t.layout != torch.strided:
                continue
            raw = (t.contiguous() if t.dim() else t.reshape(1)).view(torch.uint8).numpy().tobytes()
            assert raw == np.ascontiguousarray(a).tobytes(), (path.name, name)
            compared += 1
    assert compared > 50


def layered(layers=6):
    """A model-like file's tensors: an embedding, `layers` layers of a scalar, a norm, two
    bf16 weights and an int8 table, and a last norm (what zt_file_get_runs finds as a repeat
    of five objects between two objects that don't repeat)."""
    tensors = {"embed": np.arange(40, dtype=np.float32).reshape(10, 4)}
    for j in range(layers):
        tensors[f"layers.{j}.scale"] = np.array(j + 0.5, np.float32)
        tensors[f"layers.{j}.norm"] = np.full(4, j, np.float32)
        tensors[f"layers.{j}.q"] = (np.arange(16, dtype=np.float32).reshape(4, 4) * (j + 1)).astype(ml_dtypes.bfloat16)
        tensors[f"layers.{j}.up"] = (np.arange(24, dtype=np.float32).reshape(6, 4) - j).astype(ml_dtypes.bfloat16)
        tensors[f"layers.{j}.table"] = np.arange(8, dtype=np.int8).reshape(2, 2, 2) * (j + 1)
    tensors["norm"] = np.ones(4, np.float32)
    return tensors


def _runs(path):
    from ztensor_c import _handle, _plan
    h = _handle.Handle.open(path)
    return _plan.plan(h, h.indices(None), _handle._numpy_resolve).runs()


@linux_only
def test_layers_come_from_one_array_per_tensor_of_a_layer(tmp_path):
    tensors = layered()
    path = write(tmp_path / "layered.zt", tensors)
    runs = _runs(path)
    assert [(start, period, repeats) for start, period, repeats, _stride in runs] == [(0, 1, 1), (1, 5, 6), (31, 1, 1)]
    got = zt_numpy.load_file(path)
    assert_same_arrays(got, tensors)
    maps = _mappings_of(path)
    start = int(maps[0].split("-")[0], 16)
    for name, offset in _c_offsets(path).items():  # each array the file's bytes
        a = got[name]
        assert type(a) is np.ndarray and a.ctypes.data == start + offset, name
        assert a.flags.writeable and a.flags.c_contiguous and not a.flags.owndata, name
    assert got["layers.3.scale"].shape == () and float(got["layers.3.scale"]) == 3.5  # an array, not a scalar
    r = ztensor_c.Reader(path)
    assert_same_arrays(r.read_tensors(["layers.2.up", "layers.4.q", "norm"]),
                       {k: tensors[k] for k in ("layers.2.up", "layers.4.q", "norm")})


def test_torch_layers_are_the_files_bytes(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch cases skip")
    import ztensor_c.torch as zt_torch
    tensors = layered()
    path = write(tmp_path / "layered.zt", tensors)
    got = zt_torch.load_file(path)
    assert list(got) == list(tensors)
    for name, offset in _c_offsets(path).items():
        t, want = got[name], tensors[name]
        assert tuple(t.shape) == want.shape and t.is_contiguous(), name
        storage = t.untyped_storage()  # the file mapped (once per dtype), no copy
        assert t.data_ptr() == storage.data_ptr() + offset, name
        raw = (t if t.dim() else t.reshape(1)).view(torch.uint8).numpy().tobytes()
        assert raw == want.tobytes(), name
    # three dtypes, one mapping of the file (the reader's own is gone with it)
    gc.collect()
    if sys.platform.startswith("linux"):
        assert len(_mappings_of(path)) == 1
    # copy-on-write: a write changes this process's tensor, not the file
    got["layers.1.norm"].add_(10)
    assert got["layers.1.norm"].tolist() == [11.0] * 4
    assert zt_torch.load_file(path)["layers.1.norm"].tolist() == [1.0] * 4
    # cut from one view per layer tensor: PyTorch refuses in-place writes that would make
    # one require grad (python/README.md says so), takes them under no_grad, and a
    # Parameter made of one trains
    t = got["layers.2.norm"]
    with pytest.raises(RuntimeError, match="multiple views"):
        t.copy_(torch.ones(4, requires_grad=True))
    with torch.no_grad():
        t.copy_(torch.ones(4, requires_grad=True))
    assert t.tolist() == [1.0] * 4
    weight = torch.nn.Parameter(got["layers.3.norm"])
    (weight * 2).sum().backward()
    assert weight.grad.tolist() == [2.0] * 4
    # and what one asks of a subset comes from its runs as well
    with ztensor_c.safe_open(path, "pt") as f:
        assert f.get_tensor("layers.5.table").tolist() == (tensors["layers.5.table"]).tolist()


def test_torch_unaligned_repeats_are_decoded(tmp_path):
    """A safetensors file whose f32 layers start one byte in (the format allows it):
    torch can't view them, so they are read into tensors of their own, with the same
    values; NumPy views them where they are."""
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch cases skip")
    import json
    import struct
    import ztensor_c.torch as zt_torch
    layers = [np.array([j + 0.25, -j], np.float32) for j in range(4)]
    header = {"x": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}
    for j in range(4):
        header[f"l{j}.w"] = {"dtype": "F32", "shape": [2], "data_offsets": [1 + 8 * j, 9 + 8 * j]}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path = tmp_path / "unaligned.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"\x07" + b"".join(a.tobytes() for a in layers))
    assert [(s, p, r) for s, p, r, _stride in _runs(path)] == [(0, 1, 1), (1, 1, 4)]
    got = zt_torch.load_file(path)
    assert got["x"].tolist() == [7]
    for j in range(4):
        assert got[f"l{j}.w"].tolist() == layers[j].tolist()
    arrays = zt_numpy.load_file(path)
    for j in range(4):
        assert arrays[f"l{j}.w"].tolist() == layers[j].tolist() and not arrays[f"l{j}.w"].flags.owndata
