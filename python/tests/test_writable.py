"""Every way a user gets a writable array or tensor from the package, written to (issue 38
item 1): nothing faults, the write is seen where the user wrote, and the file never
changes.

Files are mapped copy-on-write (ZT_OPEN_COPY_ON_WRITE), so views of a mapping are
writable NumPy arrays; values the library decodes are copied into arrays of their own.
PyTorch ignores NumPy's read-only flag, so before this a `t += 1` on
`torch.from_numpy(load_file(p)[k])` wrote to a read-only mapping and killed the process.
The writes run in a child interpreter, so that a crash is a failed test with the signal
named, not the end of the test run.
"""

import hashlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import safetensors.numpy as st_numpy

import ztensor_c
import ztensor_c.numpy as zt_numpy

HAVE_TORCH = True
try:
    import torch  # noqa: F401
except ImportError:
    HAVE_TORCH = False


def files(tmp_path):
    """{kind: path}: a zTensor file (raw and zstd tensors), a safetensors file, a sharded
    zTensor set, every tensor float32 [[0, 1, 2], [3, 4, 5]] + k."""
    tensors = {f"w{k}": np.arange(6, dtype=np.float32).reshape(2, 3) + k for k in range(3)}
    out = {}
    with ztensor_c.Writer(tmp_path / "m.zt") as w:
        w.add("w0", tensors["w0"])
        w.add("w1", tensors["w1"], compress=True)
        w.add("w2", tensors["w2"])
    out["zt"] = tmp_path / "m.zt"
    st_numpy.save_file(tensors, str(tmp_path / "m.safetensors"))
    out["safetensors"] = tmp_path / "m.safetensors"
    with ztensor_c.Writer(tmp_path / "set", max_shard_size=64) as w:
        for name, a in tensors.items():
            w.add(name, a)
    out["set"] = next(tmp_path.glob("set*.index.json"))
    return out


def digest(path):
    """The digest of every file of a set (or of one file)."""
    h = hashlib.sha256()
    for p in sorted(path.parent.iterdir()):
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import ztensor_c, ztensor_c.numpy
    path, use_torch = sys.argv[1], sys.argv[2] == "1"
    done = []

    def check(what, arr, name):
        # written to where the user holds it, and seen there
        k = int(name[1:])
        arr[0, 0] += 100
        assert float(arr[0, 0]) == 100 + k, (what, float(arr[0, 0]))
        assert float(arr[1, 2]) == 5 + k, what
        done.append(what)

    numpy_paths = {
        "numpy.load_file": lambda n: ztensor_c.numpy.load_file(path)[n],
        "numpy.load_file copy": lambda n: ztensor_c.numpy.load_file(path, copy=True)[n],
        "numpy.load bytes": lambda n: ztensor_c.numpy.load(open(path, "rb").read())[n] if path.endswith(("zt", "safetensors")) else ztensor_c.numpy.load_file(path)[n],
        "Reader[]": lambda n: ztensor_c.Reader(path)[n],
        "Reader.read_numpy": lambda n: ztensor_c.Reader(path).read_numpy(n),
        "Reader.read_tensors": lambda n: ztensor_c.Reader(path).read_tensors([n])[n],
        "Tensor.numpy": lambda n: ztensor_c.Reader(path).tensor(n).numpy(),
        "np.from_dlpack(Tensor)": lambda n: np.from_dlpack(ztensor_c.Reader(path).tensor(n)),
        "safe_open np get_tensor": lambda n: ztensor_c.safe_open(path, "np").get_tensor(n),
        "safe_open np get_slice": lambda n: ztensor_c.safe_open(path, "np").get_slice(n)[:],
    }
    for what, get in numpy_paths.items():
        for name in ("w0", "w1", "w2"):
            a = get(name)
            assert a.flags.writeable, (what, name)
            check(f"{what} {name}", a, name)
    if use_torch:
        import torch
        import ztensor_c.torch
        torch_paths = {
            "torch.from_numpy(numpy.load_file)": lambda n: torch.from_numpy(ztensor_c.numpy.load_file(path)[n]),
            "torch.as_tensor(numpy.load_file)": lambda n: torch.as_tensor(ztensor_c.numpy.load_file(path)[n]),
            "torch.from_dlpack(numpy.load_file)": lambda n: torch.from_dlpack(ztensor_c.numpy.load_file(path)[n]),
            "torch.from_dlpack(Tensor)": lambda n: torch.from_dlpack(ztensor_c.Reader(path).tensor(n)),
            "torch.from_numpy(Reader[])": lambda n: torch.from_numpy(ztensor_c.Reader(path)[n]),
            "torch.from_numpy(safe_open np)": lambda n: torch.from_numpy(ztensor_c.safe_open(path, "np").get_tensor(n)),
            "torch.load_file": lambda n: ztensor_c.torch.load_file(path)[n],
            "torch.load bytes": lambda n: ztensor_c.torch.load(open(path, "rb").read())[n] if path.endswith(("zt", "safetensors")) else ztensor_c.torch.load_file(path)[n],
            "safe_open pt get_tensor": lambda n: ztensor_c.safe_open(path, "pt").get_tensor(n),
            "safe_open pt get_slice": lambda n: ztensor_c.safe_open(path, "pt").get_slice(n)[:],
            "Reader.read_torch": lambda n: ztensor_c.Reader(path).read_torch(n),
        }
        for what, get in torch_paths.items():
            for name in ("w0", "w1", "w2"):
                t = get(name)
                t += 0  # in place, as the issue's `t += 1`
                check(f"{what} {name}", t, name)
                t.mul_(2)
                assert float(t[1, 2]) == 2 * (5 + int(name[1:])), what
    print(len(done))
""")


@pytest.mark.parametrize("kind", ["zt", "safetensors", "set"])
def test_every_writable_path_writes_without_touching_the_file(tmp_path, kind):
    path = files(tmp_path)[kind]
    before = digest(path)
    child = subprocess.run([sys.executable, "-c", CHILD, str(path), "1" if HAVE_TORCH else "0"],
                           capture_output=True, text=True, timeout=300)
    if child.returncode < 0:
        pytest.fail(f"the child died of signal {-child.returncode} writing to a loaded array:\n{child.stderr}")
    assert child.returncode == 0, child.stderr
    assert int(child.stdout.split()[-1]) == (10 + (11 if HAVE_TORCH else 0)) * 3
    assert digest(path) == before  # copy-on-write: the file never changes
    # and a new reader sees the file's values
    np.testing.assert_array_equal(zt_numpy.load_file(path)["w1"], np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
    if not HAVE_TORCH:
        pytest.skip("torch is not installed: the NumPy paths ran, the torch ones skip")


def test_arrays_of_one_reader_share_writes_and_others_do_not(tmp_path):
    """Copy-on-write is per reader: arrays of one reader (one load_file, one safe_open)
    show one copy of the bytes, as tensors of one safetensors safe_open do; another
    reader of the same file has its own."""
    path = files(tmp_path)["zt"]
    with ztensor_c.safe_open(path, "np") as f:
        a = f.get_tensor("w0")
        a[0, 0] = 42
        assert f.get_tensor("w0")[0, 0] == 42  # the same reader's mapping
    r = ztensor_c.Reader(path)
    assert r["w0"][0, 0] == 0 and r.tensor("w0").numpy()[0, 0] == 0
    r["w0"][1, 1] = -1
    assert r.read_numpy("w0")[1, 1] == -1 and zt_numpy.load_file(path)["w0"][1, 1] == 4
    # a copy is its own
    c = r.read_numpy("w0", copy=True)
    c[1, 1] = 9
    assert r["w0"][1, 1] == -1
    # decoded values are arrays of their own each time: the library's memory is never shown
    z1, z2 = r["w1"], r["w1"]
    z1[0, 0] = 77
    assert z2[0, 0] == 1 and z1.flags.owndata


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="/proc/self/maps is Linux's")
def test_the_mapping_is_private_and_pread_readers_own_their_arrays(tmp_path):
    path = files(tmp_path)["safetensors"]
    a = zt_numpy.load_file(path)["w0"]
    with open("/proc/self/maps") as f:
        perms = [line.split()[1] for line in f if line.rstrip().endswith(str(path))]
    assert perms == ["rw-p"]  # MAP_PRIVATE, writable: no page is written back
    del a
    b = ztensor_c.Reader(path, mmap=False)["w0"]
    assert b.flags.writeable and b.flags.owndata


def test_equal_tensors_of_a_v2_file_do_not_alias(tmp_path):
    """zTensor v2 stores equal blobs once, so two names with equal data (two freshly
    initialised biases) have one blob: each name's array is its own all the same (a copy
    for the second name), as safetensors' are, so a write through one never shows
    through the other; load_file and safe_open, NumPy and torch."""
    path = tmp_path / "equal.zt"
    with ztensor_c.Writer(path) as w:  # zTensor v2 (the default)
        w.add("a", np.zeros(4096, np.float32))
        w.add("b", np.zeros(4096, np.float32))
        w.add("c", np.zeros(4096, np.float32))
        w.add("d", np.ones(4096, np.float32))
    loaded = zt_numpy.load_file(path)
    assert not loaded["a"].flags.owndata  # the first name keeps the zero-copy view
    loaded["a"][0] = 5.0
    assert loaded["b"][0] == loaded["c"][0] == 0.0
    with ztensor_c.safe_open(path, "np") as f:
        views = {n: f.get_tensor(n) for n in "abcd"}
        views["a"][1] = 7.0
        assert views["b"][1] == views["c"][1] == 0.0
        again = f.get_tensor("a")  # the same name again: its own view, as before
        assert again[1] == 7.0
    if HAVE_TORCH:
        import torch

        import ztensor_c.torch as zt_torch

        tensors = zt_torch.load_file(path)
        tensors["b"] += 1
        assert tensors["a"].sum() == 0 and tensors["c"].sum() == 0 and tensors["b"].sum() == 4096
        with ztensor_c.safe_open(path, "pt") as f:
            a, b = f.get_tensor("a"), f.get_tensor("b")
            a[0] = 3
            assert b[0] == 0 and torch.equal(f.get_tensor("d"), torch.ones(4096))
