"""Every format the library reads, through the Python API, against the repository's test
vectors (each with a JSON file saying what a correct reader returns)."""

import hashlib
import json
import math

import numpy as np
import pytest

import ztensor_c
import ztensor_c.numpy

NAMES = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i64": "int64",
         "i32": "int32", "i16": "int16", "i8": "int8", "u64": "uint64", "u32": "uint32",
         "u16": "uint16", "u8": "uint8", "bool": "bool"}


def load(path):
    with open(path) as f:
        return json.load(f)


def same_json_value(ours, expected):
    """Our Python value of an attribute against the vectors' JSON rendering of it."""
    if isinstance(expected, dict) and set(expected) == {"$bytes"}:
        raw = bytes.fromhex(expected["$bytes"])
        if isinstance(ours, str):  # a GGUF string that is not UTF-8: its bytes kept
            return ours.encode("utf-8", "surrogateescape") == raw
        return ours == raw
    if isinstance(expected, dict):
        return isinstance(ours, dict) and list(ours) == list(expected) and all(
            same_json_value(ours[k], v) for k, v in expected.items())
    if isinstance(ours, np.ndarray):
        ours = ours.tolist()
    if isinstance(expected, list):
        ours = list(ours)
        return len(ours) == len(expected) and all(same_json_value(a, b) for a, b in zip(ours, expected))
    if isinstance(expected, float):
        return float(ours) == expected or (math.isnan(expected) and math.isnan(ours))
    if isinstance(expected, bool):
        return ours is expected or ours == expected
    return ours == expected and type(ours) is type(expected)


def check_objects(r, expected):
    """Name, format, shape, dtype, logical type and the sha256 of the bytes of each."""
    assert sorted(r.keys()) == sorted(o["name"] for o in expected)
    for o in expected:
        m = r.metadata(o["name"])
        assert m.format == o["format"], o["name"]
        assert m.shape == o["shape"], o["name"]
        assert m.dtype == NAMES[o["dtype"]], o["name"]
        assert m.type == o["type"], o["name"]
        t = r.tensor(o["name"])
        assert t.nbytes == o["nbytes"]
        assert hashlib.sha256(t.tobytes()).hexdigest() == o["sha256"], o["name"]


@pytest.mark.parametrize("name", ["small", "dtypes", "subbyte"])
def test_safetensors_vectors(vectors, name):
    expected = load(vectors / "safetensors" / f"{name}.json")
    r = ztensor_c.Reader(vectors / "safetensors" / f"{name}.safetensors")
    assert r.format == "safetensors"
    check_objects(r, expected["objects"])
    assert same_json_value(r.attributes, expected["attributes"] or {})
    for o in expected["objects"]:
        value = r[o["name"]]  # every dtype reads (fp8 and packed types included)
        assert value.nbytes == o["nbytes"]


def test_gguf_big_endian_is_refused(vectors):
    assert load(vectors / "gguf" / "big_endian.json") == {"error": "ZT_ERR_UNSUPPORTED"}
    with pytest.raises(ztensor_c.UnsupportedError, match="big-endian") as e:
        ztensor_c.Reader(vectors / "gguf" / "big_endian.gguf")
    assert isinstance(e.value, ValueError) and e.value.status_name == "ZT_ERR_UNSUPPORTED"


@pytest.mark.parametrize("name", ["plain_v3", "align64_v2", "quant_v3"])
def test_gguf_vectors(vectors, name):
    expected = load(vectors / "gguf" / f"{name}.json")
    r = ztensor_c.Reader(vectors / "gguf" / f"{name}.gguf")
    assert (r.format, r.version) == (expected["format"], expected["version"])
    assert r.keys() == [o["name"] for o in expected["objects"]]  # GGUF keeps file order
    check_objects(r, expected["objects"])
    assert same_json_value(r.attributes, expected["attributes"])
    for o in expected["objects"]:
        if o["attributes"]:
            assert same_json_value(r.object_attributes(o["name"]), o["attributes"])


def test_gguf_typed_values(vectors):
    a = ztensor_c.Reader(vectors / "gguf" / "plain_v3.gguf").attributes
    assert a["test.u64"] == 2**64 - 1 and a["test.i64"] == -2**63
    assert a["test.u8"] == 200 and isinstance(a["test.u8"], int)
    assert isinstance(a["test.bool_true"], bool) and a["test.bool_true"]
    assert a["test.f32"] == np.float32(0.1)
    # numeric arrays keep the width the file declared
    assert a["test.array_i32"].dtype == np.int32 and a["test.array_i32"].tolist() == [1, -2, 3]
    assert a["test.array_u8"].dtype == np.uint8
    assert a["test.array_f32"].dtype == np.float32
    assert a["test.array_bool"].dtype == np.bool_
    assert a["test.array_string"] == ["a", "", "\u00fc"]
    assert a["test.string_not_utf8"].encode("utf-8", "surrogateescape") == b"ab\xffcd"


def test_gguf_quantized_tensors_dequantize(vectors):
    """Block-quantized tensors read as float32 with the values gguf-py gives, whole and
    by row slices (range reads)."""
    d = vectors / "dequant"
    expected = load(d / "dequant.json")
    f32 = np.fromfile(d / "dequant.f32", dtype="<f4")
    r = ztensor_c.Reader(d / "dequant.gguf")
    first = 0
    kinds = set()
    with ztensor_c.safe_open(d / "dequant.gguf", framework="np") as f:
        for e in expected:
            theirs = f32[first:first + e["values"]].reshape(e["shape"])
            first += e["values"]
            ours = r[e["name"]]
            assert ours.shape == tuple(e["shape"]), e["name"]
            if r.metadata(e["name"]).format.startswith("ggml_"):
                assert ours.dtype == np.float32
                kinds.add(e["type"])
            np.testing.assert_array_equal(ours.astype(np.float32), theirs, err_msg=e["name"])
            np.testing.assert_array_equal(r.read(e["name"], np.float32), theirs, err_msg=e["name"])
            s = f.get_slice(e["name"])
            assert s.get_shape() == e["shape"]
            np.testing.assert_array_equal(s[1:2].astype(np.float32), theirs[1:2], err_msg=e["name"])
            np.testing.assert_array_equal(s[-1, 3:9].astype(np.float32), theirs[-1, 3:9], err_msg=e["name"])
    assert first == len(f32) and len(kinds) >= 20


def test_gguf_unknown_type_reads_except_that_tensor(vectors):
    r = ztensor_c.Reader(vectors / "hostile" / "gguf_unknown_type.zt")
    unreadable = [n for n in r.keys() if r.metadata(n).format.startswith("ggml_type_")]
    assert unreadable
    for n in r.keys():
        if n in unreadable:
            with pytest.raises(ztensor_c.UnsupportedError) as e:
                r[n]
            assert isinstance(e.value, ValueError)
        else:
            r[n]


@pytest.mark.parametrize("name", ["compressed", "masks", "raw_dtypes", "simple_packing", "streamed_multi", "unsupported"])
def test_tensogram_vectors(vectors, name):
    expected = load(vectors / "tensogram" / f"{name}.json")
    r = ztensor_c.Reader(vectors / "tensogram" / f"{name}.tgm")
    assert r.format == "tensogram"
    assert sorted(r.keys()) == sorted(o["name"] for o in expected["objects"])
    for o in expected["objects"]:
        m = r.metadata(o["name"])
        assert m.shape == o["shape"] and m.dtype == NAMES[o["dtype"]] and m.type == o["logical_type"]
        if o["unsupported"]:
            with pytest.raises(ztensor_c.UnsupportedError):
                r[o["name"]]
            continue
        t = r.tensor(o["name"])
        assert hashlib.sha256(t.tobytes()).hexdigest() == o["sha256"], o["name"]
        assert hashlib.sha256(r[o["name"]].tobytes()).hexdigest() == o["sha256"], o["name"]
        if "hex" in o:
            assert t.tobytes().hex() == o["hex"], o["name"]


@pytest.mark.parametrize("kind", ["safetensors", "gguf"])
def test_sets(vectors, kind):
    expected = load(vectors / "sets" / "sets.json")[kind]
    d = vectors / "sets" / kind
    r = ztensor_c.Reader(d / expected["open"])
    assert [p.rsplit("/", 1)[-1] for p in r.shards] == expected["shards"]
    assert r.keys() == [o["name"] for o in expected["objects"]]
    assert same_json_value(r.attributes, expected["attributes"])
    for o in expected["objects"]:
        a = r[o["name"]]
        assert a.dtype == np.dtype(o["dtype"]) and list(a.shape) == o["shape"]
        assert a.tobytes().hex() == o["hex"], o["name"]
        assert a.flags.writeable and not a.flags.owndata  # the shard's own (copy-on-write) mapping
    loaded = ztensor_c.numpy.load_file(d / expected["open"])
    assert {k: v.tobytes().hex() for k, v in loaded.items()} == {o["name"]: o["hex"] for o in expected["objects"]}


def reference_vectors(vectors):
    return sorted(p.stem for p in (vectors / "reference").glob("*.zt"))


def test_reference_vectors_every_component(vectors):
    """The reference implementation's files (v1.2, legacy v0.1 incl. big-endian and
    sparse): every component's bytes and every attribute."""
    names = reference_vectors(vectors)
    assert len(names) > 30
    for stem in names:
        expected = load(vectors / "reference" / f"{stem}.json")
        r = ztensor_c.Reader(vectors / "reference" / f"{stem}.zt")
        assert r.version == expected["version"], stem
        assert sorted(r.keys()) == [o["name"] for o in expected["objects"]], stem
        assert same_json_value(r.attributes, expected["attributes"]), stem
        for o in expected["objects"]:
            m = r.metadata(o["name"])
            assert (m.format, m.shape) == (o["format"], o["shape"]), (stem, o["name"])
            assert same_json_value(m.attributes or {}, o["attributes"]), (stem, o["name"])
            for c in o["components"]:
                info = m.components[c["role"]]
                assert (info["dtype"], info["type"], info["encoding"], info["digest"]) == (
                    NAMES[c["dtype"]], c["type"], c["encoding"], c["digest"]), (stem, o["name"], c["role"])
                t = r.tensor(o["name"], c["role"])
                assert t.tobytes().hex() == c["data_hex"], (stem, o["name"], c["role"])
            r[o["name"]]  # the value reads (sparse as SciPy, custom formats as a dict)
        r.verify()
