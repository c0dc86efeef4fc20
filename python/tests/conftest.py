"""Shared fixtures of the ztensor_c tests.

Settings (all optional, the ctest test sets them):
  ZT_TEST_VECTORS   the repository's tests/vectors (default: found beside this file)
  ZT_REF2_PYTHON    a Python with the reference package ztensor==2.1.2 (its own venv:
                    it can't share one with ztensor==1.2.3); without it those cases skip
"""

import os
import pathlib
import sys
import sysconfig

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
VECTORS = pathlib.Path(os.environ.get("ZT_TEST_VECTORS") or REPO / "tests" / "vectors")

TORCH_MISSING = ("torch is not installed: PyPI's torch pulls gigabytes of CUDA libraries, so "
                 "the torch cases run where it is installed (the device machine has it)")


def pytest_sessionfinish(session, exitstatus):
    """On a free-threaded CPython the suite must have run without the GIL to the end: an
    extension module that doesn't declare free-threading support turns it back on when
    imported (with a warning); that fails the run."""
    if sysconfig.get_config_var("Py_GIL_DISABLED") and sys._is_gil_enabled():
        print("\nfree-threaded CPython: the GIL was enabled during the run", file=sys.stderr)
        session.exitstatus = 1


def pytest_configure(config):
    config.addinivalue_line("markers", "torch: needs PyTorch; skipped with a message without it")


@pytest.fixture
def vectors():
    if not VECTORS.is_dir():
        pytest.fail(f"test vectors not found at {VECTORS} (set ZT_TEST_VECTORS)")
    return VECTORS


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason=TORCH_MISSING)


@pytest.fixture
def no_ml_dtypes(monkeypatch):
    """Runs a test as if ml_dtypes were not installed."""
    from ztensor_c import _dtypes

    monkeypatch.setattr(_dtypes, "_ml_dtypes", None)


@pytest.fixture
def no_scipy(monkeypatch):
    from ztensor_c import _sparse

    monkeypatch.setattr(_sparse, "_scipy_sparse", None)


def values(n, dtype, seed=0):
    """Deterministic test values of a NumPy dtype."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    return rng.standard_normal(n).astype(dtype)
