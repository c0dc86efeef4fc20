"""get_slice(name)[key] as safetensors slices, table-driven against safetensors itself
(issue 38 item 4): every key of the table on tensors of several shapes, through
safetensors' safe_open and ours, for the NumPy and the PyTorch framework; the same
values, shapes and dtypes, or an error of the same type.

safetensors slices in two ways: for "pt" it hands the key to torch (None, lists and bools
index as in torch; a negative step is torch's ValueError), for "np" it runs its own
slicer (ints, slices with positive steps and one ...; SafetensorError for the rest, an
OverflowError for negative slice bounds). Ours is read on the safetensors file itself and
on zTensor copies, raw and compressed (the raw ones are views of the mapping, the
compressed ones range reads of the rows needed), so every read path answers the table.
"""

import warnings

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy as st_numpy

import ztensor_c

TENSORS = {
    "a": np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6),
    "scalar": np.array(3.5, np.float32),
    "empty": np.zeros((0, 3), np.float32),
    "bf16": (np.arange(12, dtype=np.float32) - 5).astype(ml_dtypes.bfloat16).reshape(3, 4),
    "i8": np.arange(-3, 3, dtype=np.int8),
}

KEYS = [
    0, -1, 3, 4, -4, -5, True, False, np.int64(1), np.int32(-2), np.bool_(True),
    slice(None), slice(1, 3), slice(1, None, 2), slice(None, None, 3), slice(0, 0), slice(2, 2),
    slice(3, 3), slice(4, None), slice(0, 10), slice(2, 100), slice(5, 6), slice(-3, -1), slice(-10, 10),
    slice(None, None, -1), slice(0, 3, 0), slice(3, 1),
    (0, 1), (0, 1, 2), (0, 1, 2, 3), (-1, -1, -1), (slice(None), 1), (slice(None), slice(None, None, 2)),
    (0, slice(1, 3), -1), (slice(0, 2), slice(1, 4), slice(0, 6, 3)), (1, slice(None), slice(2, 5)),
    Ellipsis, (Ellipsis,), (Ellipsis, 1), (1, Ellipsis), (Ellipsis, Ellipsis), (1, 2, Ellipsis, 3),
    (slice(0, 1), Ellipsis, slice(0, 2)), (Ellipsis, slice(None, None, -2)),
    None, (None, 0), (0, None), (slice(None), None, 1),
    [], [0], [0, 2], [-1], (slice(None), [0, 1]), [[]], [True, False, True, False],
    (), ((),), 1.0, "x",
]

# Where safetensors fails by a bug of its own rather than refusing the key, we give
# NumPy's answer: (framework, key) -> what safetensors raises.
SAFETENSORS_BUGS = {
    ("np", "slice(3, 1, None)"): "SystemError",  # a negative size it computes
}


def outcome(fn):
    """('ok', array) or ('error', the exception's class name) of fn()."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's warning for lists as indices
            value = fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return "error", type(e).__name__, str(e)
    return "ok", value, None


def as_numpy(value):
    if hasattr(value, "detach"):
        import torch

        t = value.detach().cpu()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    return np.asarray(value)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("slicing")
    st_numpy.save_file(TENSORS, str(d / "t.safetensors"))
    with ztensor_c.Writer(d / "raw.zt") as w:
        for name, a in TENSORS.items():
            w.add(name, a)
    with ztensor_c.Writer(d / "zstd.zt") as w:
        for name, a in TENSORS.items():
            w.add(name, a, compress=True)
    return d


FRAMEWORKS = ["np", "pt"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("ours", ["t.safetensors", "raw.zt", "zstd.zt"])
def test_every_key_as_safetensors(files, framework, ours):
    if framework == "pt":
        pytest.importorskip("torch", reason="torch is not installed: the pt table skips")
    compared = errors = 0
    with safetensors.safe_open(str(files / "t.safetensors"), framework=framework) as theirs, \
            ztensor_c.safe_open(files / ours, framework=framework) as mine:
        for name in TENSORS:
            st_slice, zt_slice = theirs.get_slice(name), mine.get_slice(name)
            assert zt_slice.get_shape() == st_slice.get_shape() and zt_slice.get_dtype() == st_slice.get_dtype()
            for key in KEYS:
                want = outcome(lambda: st_slice[key])
                got = outcome(lambda: zt_slice[key])
                case = f"{ours} {framework} {name}[{key!r}]"
                bug = SAFETENSORS_BUGS.get((framework, repr(key)))
                if want[0] == "error" and bug == want[1]:
                    full = TENSORS[name]
                    expected = ("error", None) if not full.shape else ("ok", np.asarray(full)[key])
                    if expected[0] == "ok":
                        assert got[0] == "ok", (case, got)
                        np.testing.assert_array_equal(as_numpy(got[1]), expected[1])
                    continue
                if want[0] == "error":
                    assert got[0] == "error", (case, "safetensors raised", want[1], want[2], "ours returned", got[1])
                    assert got[1] == want[1], (case, want[1:], got[1:])
                    errors += 1
                    continue
                assert got[0] == "ok", (case, "ours raised", got[1], got[2])
                a, b = as_numpy(want[1]), as_numpy(got[1])
                assert a.shape == b.shape and a.dtype == b.dtype, (case, a.shape, b.shape, a.dtype, b.dtype)
                assert a.tobytes() == b.tobytes(), case
                if framework == "pt":
                    assert got[1].dtype == want[1].dtype, case
                compared += 1
    assert compared > 60 and errors > 40  # the table holds both kinds for both frameworks


def test_numpy_slices_are_arrays_of_their_own(files):
    with ztensor_c.safe_open(files / "raw.zt", framework="np") as f:
        s = f.get_slice("a")[1:3]
        s[0, 0, 0] = -1
        assert f.get_tensor("a")[1, 0, 0] == 30


def test_errors_are_safetensor_errors(files):
    with ztensor_c.safe_open(files / "raw.zt", framework="np") as f:
        with pytest.raises(ztensor_c.SafetensorError, match="Non empty lists"):
            f.get_slice("a")[[0]]
        with pytest.raises(ztensor_c.SafetensorError, match="step must be a positive"):
            f.get_slice("a")[::-1]
        with pytest.raises(ztensor_c.SafetensorError) as e:  # a missing tensor too
            f.get_slice("nope")
        assert isinstance(e.value, KeyError)
