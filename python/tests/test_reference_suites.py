"""The reference `ztensor` package's own test suites, from its sdists on PyPI (pinned by
sha256), run against ztensor_c standing in for `ztensor` (issue 38 item 8): 1.2.3's three
suites and 1.2.2's memory-safety suite (Reader.load_numpy / load_torch) against
`ztensor_c.v1`, 2.1.2's API suite against `ztensor_c.v2`. Each runs in a child pytest
whose conftest puts our module in sys.modules as `ztensor` (and its numpy, torch
modules), so the reference's tests import ours unchanged.

Every case passes except those left below, each with its reason; they are deselected,
so a case that starts failing fails this test. The sdists are downloaded once into
$ZT_REFERENCE_SDISTS (the build tree, from ctest) or a temporary directory; without
network access the test skips, saying so.
"""

import hashlib
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.request

import pytest

SDISTS = {
    "1.2.3": ("https://files.pythonhosted.org/packages/ad/b7/bf8f64c0dc529b1d29cc631c5655c741a8c99f73e6d2740d5e579ea8369e/"
              "ztensor-1.2.3.tar.gz", "927fc1f16702aed117bf69cb65c6ac0db13cb6f9c2aaea84c54f322c5152d29b"),
    "1.2.2": ("https://files.pythonhosted.org/packages/8f/d9/fd0cfcfa0c8c270d4290e7d9b493f2e2b12e21ec2a2d6e7af0f326165181/"
              "ztensor-1.2.2.tar.gz", "4171889270b05387a6d6dc9dfc90570e07ca6c477e87fe84cb2c21cb9697f9ad"),
    "2.1.2": ("https://files.pythonhosted.org/packages/ae/27/c556630da6fad8f0778685ffc972d5bc78a62f84263c7ea2ff653d7ad05c/"
              "ztensor-2.1.2.tar.gz", "a3de90aa31e8905fb32a45961d866b2a4ecafed54e5a36650db77bf760a2dfce"),
}

# The cases left, and why: they test the reference's internals, a profile rule its test
# breaks, or a Python version's limit, not behaviour ours lacks.
LEFT = {
    "1.2.2": {
        "test_memory_safety.py::TestBaseChain::test_zerocopy_base_chain_contains_reader":
            "wants the 1.2.2 native Reader class itself at the end of an array's base chain; ours ends at "
            "ReaderMemory, what keeps the reader open (1.2.3's form of the test, which names that class, passes)",
        "test_memory_safety.py::TestBaseChain::test_load_numpy_zerocopy_base_chain":
            "the same base-chain class check, through load_numpy",
    },
    "2.1.2": {
        "test_api.py::test_buffer_protocol_is_zero_copy":
            "memoryview(t): a Python class exports the buffer protocol only from CPython 3.12 (PEP 688); "
            "ours has __buffer__ there",
        "test_api.py::test_a_memoryview_outlives_the_handle": "memoryview(t), as above",
        "test_api.py::test_an_indexed_source_locates_but_does_not_map":
            "memoryview(t), as above (the rest of it, locate without map, holds)",
        "test_api.py::test_verify_covers_every_part":
            "writes a zt.quant_group/1 object without the 'bits' attribute its profile requires; our writer "
            "refuses it (the reference's 2.1.2 writer does not check)",
    },
}
if sys.version_info >= (3, 12):
    LEFT["2.1.2"] = {k: v for k, v in LEFT["2.1.2"].items() if "memoryview" not in v}

# Files of a suite that can't be collected without torch: 1.2.3's test_cross_validation.py
# names torch.float32 in a class body (a parametrize list) unguarded, so where torch is
# missing (the free-threaded venv) collecting it is a NameError, not a skip. Left out there.
NEED_TORCH = {"1.2.3": ["test_cross_validation.py"]}

SUITES = [
    ("1.2.3", "ztensor_c.v1", None, 110),
    ("1.2.2", "ztensor_c.v1", "test_memory_safety.py", 19),
    ("2.1.2", "ztensor_c.v2", "test_api.py", 33),
]

CONFTEST = """
import importlib, sys
module = importlib.import_module({module!r})
sys.modules["ztensor"] = module
for sub in ("numpy", "torch", "_ztensor"):
    try:
        sys.modules["ztensor." + sub] = importlib.import_module({module!r} + "." + sub)
    except ImportError:  # torch not installed: the suites skip their torch cases
        pass
"""


def _importable(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


def sdist(version):
    url, sha256 = SDISTS[version]
    cache = os.environ.get("ZT_REFERENCE_SDISTS") or os.path.join(tempfile.gettempdir(), "zt-reference-sdists")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"ztensor-{version}.tar.gz")
    if not os.path.exists(path):
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                data = r.read()
        except OSError as e:
            pytest.skip(f"can't download the ztensor {version} sdist from PyPI ({e})")
        if hashlib.sha256(data).hexdigest() != sha256:
            pytest.fail(f"the ztensor {version} sdist's sha256 is not the pinned one")
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    return path


@pytest.mark.parametrize("version,module,only,expected", SUITES, ids=[s[0] for s in SUITES])
def test_reference_suite(tmp_path, version, module, only, expected):
    with tarfile.open(sdist(version)) as t:
        members = [m for m in t.getmembers()
                   if re.search(r"/tests/test_[a-z_]+\.py$", m.name) and (only is None or m.name.endswith(only))]
        t.extractall(tmp_path, members=members, filter="data")
    tests = os.path.dirname(os.path.join(tmp_path, members[0].name))
    with open(os.path.join(tests, "conftest.py"), "w") as f:
        f.write(CONFTEST.format(module=module))
    deselect = [arg for case in LEFT.get(version, {}) for arg in ("--deselect", case)]
    files = [os.path.basename(m.name) for m in members]  # node ids relative to tests/, as LEFT names them
    if not _importable("torch"):
        files = [f for f in files if f not in NEED_TORCH.get(version, [])]
    child = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
                            "--tb=short", "-W", "ignore::DeprecationWarning", *deselect, *files],
                           cwd=tests, capture_output=True, text=True, timeout=1200)
    summary = child.stdout.strip().splitlines()[-1] if child.stdout.strip() else child.stderr[-2000:]
    assert child.returncode == 0, child.stdout[-6000:] + child.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    complete = all(_importable(m) for m in ("torch", "gguf", "onnx", "ml_dtypes"))
    assert passed >= (expected if complete else expected // 3), summary  # fewer skip without those
    print(f"ztensor {version} ({module}): {summary}; left: {len(LEFT.get(version, {}))}")
