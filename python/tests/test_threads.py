"""Threads: loads from 8 threads at once, and the GIL released around library calls."""

import ctypes
import hashlib
import os
import sys
import threading

import numpy as np
import pytest

import ztensor_c
import ztensor_c.numpy as zt_numpy
from _http import RangeServer
from conftest import values
from ztensor_c import _lib
from ztensor_c._lib import ffi, lib

THREADS = 8


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("threads") / "model.zt"
    with ztensor_c.Writer(path, version="1.2") as w:
        for i in range(64):
            w.add(f"raw.{i}", values(4096, "float32", i).reshape(64, 64))
            w.add(f"zstd.{i}", values(4096, "int16", 100 + i), compress=True, checksum="crc32c")
        w.add("big", np.arange(2 << 20, dtype=np.float32), compress=True)  # 8 MiB: 2 frames
    return path


def expected_digest(path):
    return {k: hashlib.sha256(v.tobytes()).hexdigest() for k, v in zt_numpy.load_file(path, copy=True).items()}


def run_threads(target):
    barrier = threading.Barrier(THREADS)
    errors = []
    results = [None] * THREADS

    def body(k):
        try:
            barrier.wait()
            results[k] = target(k)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]
    return results


def test_eight_threads_load_files_at_once(model):
    expected = expected_digest(model)

    def load(k):
        loaded = zt_numpy.load_file(model, copy=k % 2 == 1)
        return {n: hashlib.sha256(a.tobytes()).hexdigest() for n, a in loaded.items()}

    for result in run_threads(load):
        assert result == expected


def test_eight_threads_share_one_reader(model):
    expected = expected_digest(model)
    r = ztensor_c.Reader(model)
    names = r.keys()

    def read(k):
        out = {}
        for name in names[k::THREADS] + names:  # first each its own part, then all at once
            out[name] = hashlib.sha256(r[name].tobytes()).hexdigest()
        t = r.tensor("big")  # a Tensor of an encoded component decodes its own copy
        assert np.array_equal(t.numpy(), np.arange(2 << 20, dtype=np.float32))
        # the library's view of it is decoded once, whichever thread asks first
        view = ffi.new("zt_view *")
        _lib.check(lib.zt_component_view(r._handle().ptr, r.keys().index("big"), b"data", view))
        return out, int(ffi.cast("uintptr_t", view.data))

    results = run_threads(read)
    for out, _ in results:
        assert out == expected
    assert len({address for _, address in results}) == 1  # every thread got the same copy


def test_eight_threads_safe_open_and_slices(model):
    a = zt_numpy.load_file(model)["big"]

    def read(k):
        with ztensor_c.safe_open(model, framework="np") as f:
            s = f.get_slice("big")
            lo = k * (len(a) // THREADS)
            return np.array_equal(s[lo:lo + 1000], a[lo:lo + 1000])

    assert all(run_threads(read))


def test_one_storage_per_file_when_threads_slice_one_safe_open(tmp_path):
    """transformers materializes get_slice(name)[...] of one safe_open on a thread pool;
    every tensor of a file comes out of the file's one storage (as safetensors'), which
    save_pretrained groups tensors by: two threads mapping the file at once gave two."""
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch case needs it")
    import ztensor_c.torch as zt_torch

    path = tmp_path / "shard.safetensors"
    zt_torch.save_file({f"w.{i}": torch.full((16, 16), float(i)) for i in range(THREADS * 4)}, path)
    for _ in range(5):
        with ztensor_c.safe_open(path, framework="pt") as f:
            def read(k):
                return [f.get_slice(f"w.{i}")[...] for i in range(k, THREADS * 4, THREADS)]

            tensors = [t for part in run_threads(read) for t in part]
        assert len({t.untyped_storage().data_ptr() for t in tensors}) == 1
        assert all(torch.equal(t, torch.full((16, 16), float(int(n)))) for t, n in zip(
            tensors, [i for k in range(THREADS) for i in range(k, THREADS * 4, THREADS)]))


def test_gil_is_released_while_the_library_waits(model, tmp_path):
    """The file is served over HTTP by a thread of this very process. Opening its URL and
    reading its tensors succeed only if every library call lets that thread run: were
    the GIL held during a call, the server could not answer and the call would time out
    (after 5 s here, with no retry)."""
    expected = expected_digest(model)
    with RangeServer(model.parent) as server:
        url = f"{server.url}/{model.name}"
        remote = {"timeout_ms": 5000, "retries": 0, "max_concurrency": 4}
        r = ztensor_c.Reader(url, remote=remote)
        assert r.keys()[:2] == ["raw.0", "zstd.0"]
        assert hashlib.sha256(r["zstd.3"].tobytes()).hexdigest() == expected["zstd.3"]
        assert hashlib.sha256(r["raw.5"].tobytes()).hexdigest() == expected["raw.5"]
        requests, moved = r.remote_stats
        assert requests >= 3 and moved > 0
        assert server.requests >= requests
        loaded = zt_numpy.load_file(url)  # the URL's batch load: concurrent range requests
        assert {n: hashlib.sha256(a.tobytes()).hexdigest() for n, a in loaded.items()} == expected
        with ztensor_c.safe_open(url, framework="np") as f:
            np.testing.assert_array_equal(f.get_slice("big")[5000:5010], np.arange(5000, 5010, dtype=np.float32))
        # 8 threads on the URL at once, the server in the same process
        results = run_threads(lambda k: hashlib.sha256(r[f"zstd.{k}"].tobytes()).hexdigest())
        assert results == [expected[f"zstd.{k}"] for k in range(THREADS)]
        with pytest.raises(OSError) as e:
            ztensor_c.Reader(f"{server.url}/missing.zt", remote=remote)
        assert "404" in str(e.value) and e.value.status_name == "ZT_ERR_IO"


@pytest.mark.skipif(not getattr(sys, "_is_gil_enabled", lambda: True)(),
                    reason="free-threaded CPython runs without the GIL: there is none for "
                           "PyDLL to hold, so the control can't time out")
def test_the_gil_test_can_fail(model):
    """The control of the test above: the same open through ctypes.PyDLL, which keeps the
    GIL during the call, gets no answer from the server thread and times out."""
    native = ctypes.PyDLL(os.path.join(os.path.dirname(ztensor_c.__file__), "_native",
                                       next(f for f in os.listdir(os.path.join(
                                           os.path.dirname(ztensor_c.__file__), "_native"))
                                           if f.endswith((".so", ".dylib", ".dll")))))
    open_url = native.zt_open_url_with
    open_url.restype = ctypes.c_int
    open_url.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    remote = ffi.new("zt_remote_options *")
    remote.timeout_ms = 1000
    remote.flags = _lib.lib.ZT_REMOTE_NO_RETRY
    out = ffi.new("zt_reader **")
    with RangeServer(model.parent) as server:
        url = f"{server.url}/{model.name}".encode()
        status = open_url(url, None, int(ffi.cast("uintptr_t", remote)), int(ffi.cast("uintptr_t", out)))
        assert status == _lib.lib.ZT_ERR_IO
        assert b"timed out" in ffi.string(_lib.lib.zt_last_error()).lower() or b"timeout" in ffi.string(_lib.lib.zt_last_error()).lower()
        # the same call through cffi: answered
        assert _lib.lib.zt_open_url_with(url, ffi.NULL, remote, out) == _lib.lib.ZT_OK
        _lib.lib.zt_close(out[0])
