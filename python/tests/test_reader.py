"""Reader and Writer: the reference package's API, every dtype, errors as Python expects."""

import errno
import json
import os

import ml_dtypes
import numpy as np
import pytest

import ztensor_c
from conftest import values

PLAIN = ["float64", "float32", "float16", "int64", "int32", "int16", "int8",
         "uint64", "uint32", "uint16", "uint8", "bool"]


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.zt"
    with ztensor_c.Writer(path, version="1.2") as w:
        w.add("embed", values(24, "float32").reshape(4, 6))
        w.add("norm", values(6, "float16", 1), compress=True, checksum="sha256")
        w.add("scalar", np.array(7, np.int32))
        w.set_attributes({"model": "tiny", "layers": 2, "blob": b"\x00\xff"})
        w.set_attributes({"note": "an object attribute"}, name="embed")
    return path


def test_mapping_api(model):
    with ztensor_c.Reader(model) as r:
        assert r.format == "zt" and r.version == "1.2.0"
        assert len(r) == 3
        assert r.keys() == ["embed", "norm", "scalar"]
        assert list(r) == ["embed", "norm", "scalar"]
        assert "norm" in r and "nope" not in r and 3 not in r
        assert repr(r) == "<ztensor_c.Reader [zt, 3 tensor(s)]>"
        np.testing.assert_array_equal(r["embed"], values(24, "float32").reshape(4, 6))
        np.testing.assert_array_equal(r["norm"], values(6, "float16", 1))
        assert r["scalar"].shape == () and r["scalar"] == 7
        assert r.get("nope", 5) == 5
        assert [k for k, _ in r.items()] == r.keys()
        assert r.attributes == {"model": "tiny", "layers": 2, "blob": b"\x00\xff"}
        assert r.object_attributes("embed") == {"note": "an object attribute"}
        assert json.loads(r.attributes_json)["model"] == "tiny"
    assert r.closed and repr(r) == "<ztensor_c.Reader (closed)>"
    with pytest.raises(ValueError, match="closed"):
        r.keys()
    assert ztensor_c.open(model).keys() == ["embed", "norm", "scalar"]


def test_metadata(model):
    r = ztensor_c.Reader(model)
    m = r.metadata("embed")
    assert (m.name, m.dtype, m.shape, m.format, m.type) == ("embed", "float32", [4, 6], "dense", None)
    assert m.attributes == {"note": "an object attribute"}
    assert m.components["data"]["encoding"] == "raw" and m.components["data"]["decoded_length"] == 96
    assert m.components["data"]["offset"] % 64 == 0
    n = r.metadata("norm")
    assert n.components["data"]["encoding"] == "zstd"
    assert n.components["data"]["digest"].startswith("sha256:")
    assert [x.name for x in r.metadata(["norm", "scalar"])] == ["norm", "scalar"]
    assert repr(m) == "<TensorMetadata name='embed' shape=[4, 6] dtype='float32' format='dense'>"
    with pytest.raises(TypeError):
        r.metadata(3)


def test_read_tensors_and_copies(model):
    r = ztensor_c.Reader(model)
    t = r.read_tensors(["scalar", "embed"])
    assert list(t) == ["embed", "scalar"]  # file order
    assert t["embed"].flags.writeable and not t["embed"].flags.owndata  # the mapping, copy-on-write
    c = r.read_tensors(["embed", "norm"], copy=True)
    assert c["embed"].flags.writeable and c["norm"].flags.writeable
    c["embed"][0, 0] = 100  # its own memory: the file is untouched
    assert r["embed"][0, 0] == values(24, "float32")[0]
    assert r.read_numpy("norm").dtype == np.float16
    np.testing.assert_array_equal(r.read("embed", np.float64), values(24, "float32").reshape(4, 6).astype(np.float64))
    dst = np.empty((4, 6), np.float32)
    r.read_into("embed", dst)
    np.testing.assert_array_equal(dst, r["embed"])
    with pytest.raises(ztensor_c.BufferTooSmallError):
        r.read_into("embed", np.empty(5, np.float32))
    with pytest.raises(ValueError):  # larger is refused too: the size must be exact
        r.read_into("embed", np.empty(25, np.float32))


@pytest.mark.parametrize("dtype", PLAIN)
@pytest.mark.parametrize("compress", [False, True])
def test_every_plain_dtype_round_trips(tmp_path, dtype, compress):
    a = values(30, dtype).reshape(2, 3, 5)
    path = tmp_path / "d.zt"
    with ztensor_c.Writer(path) as w:
        w.add("a", a, compress=compress, checksum="xxh3")
    r = ztensor_c.Reader(path)
    b = r["a"]
    assert b.dtype == a.dtype and b.shape == (2, 3, 5)
    np.testing.assert_array_equal(b, a)
    assert r.metadata("a").dtype == dtype
    r.verify()


@pytest.mark.parametrize("name,logical", [
    ("bfloat16", None), ("float8_e4m3fn", "f8_e4m3fn"), ("float8_e5m2", "f8_e5m2"),
    ("float8_e4m3fnuz", "f8_e4m3fnuz"), ("float8_e5m2fnuz", "f8_e5m2fnuz"),
    ("float8_e8m0fnu", "f8_e8m0fnu")])
def test_ml_dtypes_round_trip(tmp_path, name, logical):
    dt = np.dtype(getattr(ml_dtypes, name))
    a = np.array([0.5, 1, 2, 4, 0.25, 8], np.float32).astype(dt).reshape(2, 3)
    path = tmp_path / "m.zt"
    with ztensor_c.Writer(path, version="1.2") as w:
        w.add("a", a)
    r = ztensor_c.Reader(path)
    b = r["a"]
    assert b.dtype == dt
    np.testing.assert_array_equal(b.view(np.uint8), a.view(np.uint8))
    m = r.metadata("a")
    assert m.type == logical
    assert m.dtype == ("bfloat16" if name == "bfloat16" else "uint8")


def test_without_ml_dtypes_bf16_and_fp8_are_raw_with_a_clear_dtype(tmp_path, no_ml_dtypes):
    bits = np.array([0x3F80, 0x4000, 0xC040], np.uint16)  # bf16 1.0, 2.0, -3.0
    path = tmp_path / "raw.zt"
    with ztensor_c.Writer(path) as w:
        w.add("bf", bits.view([("bf16", "<u2")]))
        w.add("f8", np.array([0x38, 0x40], np.uint8).view([("f8_e4m3fn", "u1")]))
    r = ztensor_c.Reader(path)
    bf = r["bf"]
    assert bf.dtype == np.dtype([("bf16", "<u2")])
    np.testing.assert_array_equal(bf["bf16"], bits)
    assert r.metadata("bf").dtype == "bfloat16"
    f8 = r["f8"]
    assert f8.dtype == np.dtype([("f8_e4m3fn", "u1")]) and list(f8["f8_e4m3fn"]) == [0x38, 0x40]
    assert r.metadata("f8").type == "f8_e4m3fn"
    # the library converts them when asked
    np.testing.assert_array_equal(r.read("bf", np.float32), [1.0, 2.0, -3.0])
    np.testing.assert_array_equal(r.read("f8", np.float32), [1.0, 2.0])


def test_complex(tmp_path):
    a = values(6, "complex64").reshape(2, 3)
    b = values(4, "complex128")
    path = tmp_path / "c.zt"
    with ztensor_c.Writer(path) as w:
        w.add("c64", a)
        w.add("c128", b, compress=3)
    r = ztensor_c.Reader(path)
    np.testing.assert_array_equal(r["c64"], a)
    np.testing.assert_array_equal(r["c128"], b)
    assert r.metadata("c64").type == "complex64" and r.metadata("c64").dtype == "float32"


def test_writer_errors_leave_no_file(tmp_path):
    path = tmp_path / "w.zt"
    with pytest.raises(RuntimeError, match="boom"):
        with ztensor_c.Writer(path) as w:
            w.add("a", np.ones(3))
            raise RuntimeError("boom")
    assert not path.exists() and os.listdir(tmp_path) == []
    w = ztensor_c.Writer(path)
    w.add("a", np.ones(3))
    with pytest.raises(ztensor_c.InvalidArgumentError, match="'a'"):
        w.add("a", np.ones(3))  # a name twice
    with pytest.raises(ValueError, match="no zTensor dtype"):
        w.add("o", np.array(["x"], dtype=object))
    with pytest.raises(ValueError, match="checksum"):
        w.add("b", np.ones(3), checksum="md5")
    w.finish()
    assert repr(w) == "<ztensor_c.Writer (finished)>"
    with pytest.raises(ztensor_c.StateError, match="finished"):  # a RuntimeError, as the reference's
        w.add("c", np.ones(1))
    assert ztensor_c.Reader(path).keys() == ["a"]


def test_writer_takes_big_endian_and_strided_arrays(tmp_path):
    a = np.arange(12, dtype=">i4").reshape(3, 4)
    path = tmp_path / "e.zt"
    with ztensor_c.Writer(path, sync=False) as w:
        w.add("be", a)
        w.add("strided", np.arange(20, dtype=np.float64)[::2])
    r = ztensor_c.Reader(path)
    np.testing.assert_array_equal(r["be"], np.arange(12).reshape(3, 4))
    assert r["be"].dtype == np.dtype("<i4")
    np.testing.assert_array_equal(r["strided"], np.arange(0, 20, 2))


def test_sharded_writer(tmp_path):
    base = tmp_path / "tiny"
    with ztensor_c.Writer(base, max_shard_size=3000, version="1.2") as w:
        for i in range(4):
            w.add(f"layer.{i}", np.full(256, i, np.float32))
    index = tmp_path / "tiny.zt.index.json"
    assert index.exists()
    r = ztensor_c.Reader(index)
    assert r.keys() == [f"layer.{i}" for i in range(4)]
    assert len(r.shards) == 2 and all(os.path.exists(p) for p in r.shards)
    for i in range(4):
        np.testing.assert_array_equal(r[f"layer.{i}"], np.full(256, i, np.float32))


def test_errors_are_what_python_code_expects(model, tmp_path):
    r = ztensor_c.Reader(model)
    with pytest.raises(KeyError) as e:
        r["missing"]
    assert isinstance(e.value, ztensor_c.NotFoundError)
    with pytest.raises(KeyError):
        r.metadata("missing")
    with pytest.raises(FileNotFoundError) as e:
        ztensor_c.Reader(tmp_path / "no-such-file.zt")
    assert e.value.errno == errno.ENOENT and "no-such-file.zt" in str(e.value)
    assert isinstance(e.value, ztensor_c.ZtError) and e.value.status_name == "ZT_ERR_IO"
    bad = tmp_path / "bad.zt"
    bad.write_bytes(b"ZTEN0001" + b"\x00" * 40)
    with pytest.raises(ValueError) as e:
        ztensor_c.Reader(bad)
    assert isinstance(e.value, ztensor_c.FormatError) and "bad.zt" in e.value.message
    trunc = tmp_path / "trunc.zt"
    trunc.write_bytes(model.read_bytes()[:-20])
    with pytest.raises(ztensor_c.FormatError):
        ztensor_c.Reader(trunc)
    with pytest.raises(OSError, match="is a directory"):
        ztensor_c.Reader(tmp_path)
    with pytest.raises(TypeError):
        r[3]
    # the system's error number comes from the library (zt_last_os_error), not the text
    (tmp_path / "locked.zt").write_bytes(model.read_bytes())
    os.chmod(tmp_path / "locked.zt", 0)
    if os.geteuid() != 0:  # root reads it anyway
        with pytest.raises(PermissionError) as e:
            ztensor_c.Reader(tmp_path / "locked.zt")
        assert e.value.errno == errno.EACCES
    (tmp_path / "d").mkdir()
    with pytest.raises(FileNotFoundError) as e:
        ztensor_c.Reader(tmp_path / "d" / "(os error 13)")
    assert e.value.errno == errno.ENOENT


def test_urls_are_the_librarys():
    """A path is a URL when the library says so (zt_path_is_url), every scheme it opens
    included: an adl:// path is sent to the remote code, which refuses it for its own
    reasons (no credentials, no network), never as a missing local file."""
    from ztensor_c._handle import is_url

    for url in (b"s3://b/k", b"S3A://b/k", b"gs://b/k", b"az://c/k", b"azure://c/k", b"abfs://c/k",
                b"abfss://c/k", b"adl://c/k", b"http://127.0.0.1/k", b"HTTPS://h/k"):
        assert is_url(url), url
    for path in (b"model.zt", b"./s3://b/k", b"s3://", b"ftp://h/k", b""):
        assert not is_url(path), path
    with pytest.raises(ValueError, match="remote options are for URLs"):
        ztensor_c.Reader("model.zt", remote={})


def test_corrupted_digest_is_a_checksum_error(tmp_path):
    path = tmp_path / "d.zt"
    with ztensor_c.Writer(path) as w:
        w.add("a", np.arange(64, dtype=np.uint8), checksum="sha256")
    data = bytearray(path.read_bytes())
    offset = ztensor_c.Reader(path).metadata("a").components["data"]["offset"]
    data[offset] ^= 1
    path.write_bytes(bytes(data))
    r = ztensor_c.Reader(path)
    with pytest.raises(ztensor_c.ChecksumError) as e:
        r.verify()
    assert isinstance(e.value, ValueError) and e.value.status_name == "ZT_ERR_CHECKSUM"
    with pytest.raises(ztensor_c.ChecksumError):
        ztensor_c.Reader(path, verify=True)


def test_open_options(model):
    r = ztensor_c.Reader(model, mmap=False)
    np.testing.assert_array_equal(r["embed"], values(24, "float32").reshape(4, 6))
    assert r["embed"].flags.writeable  # pread: decoded into an array of its own
    with pytest.raises(TypeError, match="unknown open option"):
        ztensor_c.Reader(model, max_bogus=3)
    with pytest.raises(ztensor_c.LimitError):
        ztensor_c.Reader(model, max_manifest_size=10)


def test_from_bytes(model):
    r = ztensor_c.Reader.from_bytes(model.read_bytes())
    assert r.keys() == ["embed", "norm", "scalar"] and r.path is None
    np.testing.assert_array_equal(r["embed"], values(24, "float32").reshape(4, 6))


def test_every_status_the_library_names_has_an_exception_class():
    """A status added to the C API (ZT_ERR_CANCELED was) gets its Python class too."""
    from ztensor_c import _lib

    names = {}
    code = 1
    while True:
        name = _lib.ffi.string(_lib.lib.zt_status_name(code)).decode()
        if name == "ZT_UNKNOWN_STATUS":
            break
        names[code] = name
        code += 1
    assert names[11] == "ZT_ERR_CANCELED"
    assert sorted(_lib._ERRORS) == sorted(names), names
    assert issubclass(_lib._ERRORS[11], ztensor_c.ZtError)
    assert ztensor_c.CanceledError is _lib._ERRORS[11]
