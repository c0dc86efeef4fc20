"""Zero-copy arrays and DLPack: the same address as the library's view, inside the file's
mapping (copy-on-write), the reader kept alive, the deleter rules of the DLPack spec."""

import ctypes
import gc
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import ztensor_c
from ztensor_c import _dlpack, _lib
from ztensor_c._lib import ffi

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")

_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi))


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "zc.zt"
    with ztensor_c.Writer(path) as w:
        w.add("raw", np.arange(1024, dtype=np.float32).reshape(32, 32))
        w.add("zstd", np.arange(1024, dtype=np.float32), compress=True)
        w.add("bf16", np.array([1, 2, 3], np.float32).astype(ml_dtypes.bfloat16))
        w.add("fp8", np.array([1, 2], np.float32).astype(ml_dtypes.float8_e4m3fn))
        w.add("c64", np.array([1 + 2j, 3 - 4j], np.complex64))
        w.add("flags", np.array([True, False, True]))
    return path


def c_view_address(path, name):
    """The pointer zt_component_view gives, from a reader of our own."""
    out = ffi.new("zt_reader **")
    _lib.check(_lib.lib.zt_open_with(str(path).encode(), ffi.NULL, out))
    try:
        index = ffi.new("size_t *")
        _lib.check(_lib.lib.zt_object_find(out[0], name.encode(), index))
        v = ffi.new("zt_view *")
        _lib.check(_lib.lib.zt_component_view(out[0], index[0], b"data", v))
        return bool(v.zero_copy), int(ffi.cast("uintptr_t", v.data)) - _mapping(out[0])[0]
    finally:
        _lib.lib.zt_close(out[0])


def _mapping(reader):
    base = ffi.new("const void **")
    size = ffi.new("uint64_t *")
    _lib.check(_lib.lib.zt_shard_get_mapping(reader, 0, base, size))
    return int(ffi.cast("uintptr_t", base[0])), size[0]


def mappings_of(path):
    """[(start, end)] of the process's mappings of `path`."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].strip() == str(path):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                out.append((start, end))
    return out


@linux_only
def test_raw_arrays_view_the_mapping_and_keep_the_reader(model):
    r = ztensor_c.Reader(model)
    a = r["raw"]
    zero_copy, offset_in_file = c_view_address(model, "raw")
    assert zero_copy
    maps = mappings_of(model)
    assert len(maps) == 1, maps
    start, end = maps[0]
    # the array's data is the file's mapping at the component's offset: no copy
    assert start <= a.ctypes.data < end
    assert a.ctypes.data - start == offset_in_file == r.metadata("raw").components["data"]["offset"]
    assert a.flags.writeable and not a.flags.owndata  # copy-on-write: writes stay here
    a[0, 0] = 7
    a[0, 0] = 0
    # the same memory again, not another copy
    assert r["raw"].ctypes.data == a.ctypes.data
    # the reader closed and gone: the array keeps the mapping
    r.close()
    del r
    gc.collect()
    assert mappings_of(model) == maps
    np.testing.assert_array_equal(a, np.arange(1024, dtype=np.float32).reshape(32, 32))
    b = a[3:5]  # views of views keep it too
    del a
    gc.collect()
    assert mappings_of(model) == maps
    assert b[0, 0] == 96
    del b
    gc.collect()
    assert mappings_of(model) == []  # the last array gone: zt_close ran, the file is unmapped


@linux_only
def test_decoded_arrays_are_their_own(model):
    r = ztensor_c.Reader(model)
    z = r["zstd"]
    start, end = mappings_of(model)[0]
    assert not start <= z.ctypes.data < end
    assert z.flags.writeable and z.flags.owndata
    np.testing.assert_array_equal(z, np.arange(1024, dtype=np.float32))
    del r
    gc.collect()
    assert mappings_of(model) == []  # a decoded array doesn't hold the file


def capsule_struct(capsule, name):
    return ffi.cast("DLManagedTensorVersioned *" if name == b"dltensor_versioned" else "DLManagedTensor *",
                    _pointer(capsule, name))


@linux_only
def test_dlpack_numpy_same_address(model):
    r = ztensor_c.Reader(model)
    t = r.tensor("raw")
    assert t.zero_copy and t.shape == (32, 32) and t.dtype == np.float32
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    start, end = mappings_of(model)[0]
    assert a.ctypes.data - start == r.metadata("raw").components["data"]["offset"]
    assert a.ctypes.data == r["raw"].ctypes.data
    assert a.flags.writeable  # no read-only flag: the mapping is copy-on-write
    np.testing.assert_array_equal(a, np.arange(1024, dtype=np.float32).reshape(32, 32))
    assert _dlpack.live_count() == 1
    del t, r
    gc.collect()
    np.testing.assert_array_equal(a[1], np.arange(32, 64, dtype=np.float32))
    del a
    gc.collect()
    assert _dlpack.live_count() == 0  # numpy called the deleter
    assert mappings_of(model) == []


def test_versioned_capsule_fields(model):
    r = ztensor_c.Reader(model)
    t = r.tensor("raw")
    cap = t.__dlpack__(max_version=(1, 0))
    m = capsule_struct(cap, b"dltensor_versioned")
    assert (m.version.major, m.version.minor) == (1, 1)
    assert m.flags == 0  # writable (copy-on-write), not a copy
    d = m.dl_tensor
    assert int(ffi.cast("uintptr_t", d.data)) == t.numpy().ctypes.data
    assert (d.device.device_type, d.device.device_id) == (1, 0)
    assert d.ndim == 2 and list(ffi.unpack(d.shape, 2)) == [32, 32]
    assert d.strides == ffi.NULL and d.byte_offset == 0
    assert (d.dtype.code, d.dtype.bits, d.dtype.lanes) == (2, 32, 1)
    assert m.deleter != ffi.NULL
    # never consumed: destroying the capsule runs the deleter
    assert _dlpack.live_count() == 1
    del cap, m, d
    gc.collect()
    assert _dlpack.live_count() == 0


def test_legacy_capsule(model):
    t = ztensor_c.Reader(model).tensor("raw")
    for kwargs in ({}, {"max_version": None}, {"max_version": (0, 8)}):
        cap = t.__dlpack__(**kwargs)
        assert "dltensor" in repr(cap) and "versioned" not in repr(cap)
        m = capsule_struct(cap, b"dltensor")
        assert m.dl_tensor.ndim == 2 and (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits) == (2, 32)
        del cap, m
    gc.collect()
    assert _dlpack.live_count() == 0


def test_consumer_calls_the_deleter_once(model):
    """What a consumer does: rename the capsule, call the deleter when done; the capsule's
    own destructor must then leave it alone."""
    t = ztensor_c.Reader(model).tensor("raw")
    for name, used in ((b"dltensor_versioned", b"used_dltensor_versioned"), (b"dltensor", b"used_dltensor")):
        cap = t.__dlpack__(max_version=(1, 0) if b"versioned" in name else None)
        m = capsule_struct(cap, name)
        assert _set_name(cap, used) == 0
        del cap  # consumed: destroying it must not call the deleter
        gc.collect()
        assert _dlpack.live_count() == 1
        m.deleter(m)  # the consumer is done, maybe on another thread
        assert _dlpack.live_count() == 0


def test_dlpack_of_decoded_and_copies(model):
    r = ztensor_c.Reader(model)
    z = r.tensor("zstd")
    assert not z.zero_copy and z.encoding == "zstd"
    a = np.from_dlpack(z)
    b = np.from_dlpack(z)
    assert a.ctypes.data == b.ctypes.data  # the Tensor's decoded copy, made once
    assert a.flags.writeable  # its own memory, not the library's
    np.testing.assert_array_equal(a, np.arange(1024, dtype=np.float32))
    if tuple(int(x) for x in np.__version__.split(".")[:2]) >= (2, 1):  # from_dlpack(copy=) came in 2.1
        c = np.from_dlpack(r.tensor("raw"), copy=True)
        assert c.flags.writeable and c.ctypes.data != r["raw"].ctypes.data
    cap = r.tensor("raw").__dlpack__(max_version=(1, 0), copy=True)
    assert capsule_struct(cap, b"dltensor_versioned").flags == _dlpack.FLAG_IS_COPIED


def test_dlpack_refusals(model):
    t = ztensor_c.Reader(model).tensor("raw")
    with pytest.raises(BufferError, match="device"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream"):
        t.__dlpack__(stream=1)
    assert t.__dlpack__(dl_device=(1, 0), stream=None) is not None


@pytest.mark.parametrize("name,code,bits,shape", [
    ("bf16", 4, 16, [3]), ("fp8", 10, 8, [2]), ("c64", 5, 64, [2]), ("flags", 6, 8, [3])])
def test_dlpack_dtypes(model, name, code, bits, shape):
    t = ztensor_c.Reader(model).tensor(name)
    cap = t.__dlpack__(max_version=(1, 0))
    d = capsule_struct(cap, b"dltensor_versioned").dl_tensor
    assert (d.dtype.code, d.dtype.bits, d.dtype.lanes) == (code, bits, 1)
    assert list(ffi.unpack(d.shape, d.ndim)) == shape


def test_numpy_from_dlpack_values(model):
    r = ztensor_c.Reader(model)
    np.testing.assert_array_equal(np.from_dlpack(r.tensor("c64")), [1 + 2j, 3 - 4j])
    np.testing.assert_array_equal(np.from_dlpack(r.tensor("flags")), [True, False, True])
    np.testing.assert_array_equal(np.asarray(r.tensor("raw")), r["raw"])


@pytest.mark.torch
def test_torch_from_dlpack_shares_memory(model, torch):
    r = ztensor_c.Reader(model)
    x = torch.from_dlpack(r.tensor("raw"))
    assert x.data_ptr() == r["raw"].ctypes.data
    assert torch.equal(x, torch.arange(1024, dtype=torch.float32).reshape(32, 32))
    bf = torch.from_dlpack(r.tensor("bf16"))
    assert bf.dtype == torch.bfloat16 and bf.tolist() == [1.0, 2.0, 3.0]
    f8 = torch.from_dlpack(r.tensor("fp8"))
    assert f8.dtype == torch.float8_e4m3fn and f8.float().tolist() == [1.0, 2.0]
    c = torch.from_dlpack(r.tensor("c64"))
    assert c.dtype == torch.complex64 and c.tolist() == [1 + 2j, 3 - 4j]
    del r
    gc.collect()
    assert x[1, 0].item() == 32.0  # the tensor keeps the mapping


def test_exported_tensors_alive_at_exit_end_cleanly(model):
    """Arrays and capsules still alive when the interpreter exits (module globals, a
    reference cycle, a capsule never consumed, a legacy one) release their memory during
    shutdown, after the collector has cleared unreachable functions and modules' globals
    are gone: the deleters must need neither (on free-threaded CPython 3.14 a deleter that
    looked up a global crashed the process at exit)."""
    script = f"""
import numpy as np
import ztensor_c
r = ztensor_c.Reader({str(model)!r})
a = np.from_dlpack(r.tensor("raw"))
b = np.from_dlpack(r.tensor("zstd"))
unconsumed = r.tensor("raw").__dlpack__(max_version=(1, 1))
legacy = r.tensor("raw").__dlpack__()
cycle = [a]
cycle.append(cycle)
print(float(a[1, 1]), float(b[5]))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout, out.stderr) == (0, "33.0 5.0\n", "")
