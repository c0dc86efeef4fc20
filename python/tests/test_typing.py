"""Typing (issue 38 item 10): the package ships py.typed and stubs; every public name of
every public module is in its stub; `mypy --strict` passes on the examples
(python/examples), and the examples run."""

import ast
import importlib
import os
import subprocess
import sys

import pytest

import ztensor_c

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
PACKAGE = os.path.dirname(ztensor_c.__file__)
MODULES = ["ztensor_c", "ztensor_c.numpy", "ztensor_c.torch", "ztensor_c.v1", "ztensor_c.v1.numpy",
           "ztensor_c.v1.torch", "ztensor_c.v2", "ztensor_c.v2.numpy"]


def stub_names(module):
    rel = module.split(".")[1:]
    path = os.path.join(PACKAGE, *rel, "__init__.pyi") if module in ("ztensor_c", "ztensor_c.v1", "ztensor_c.v2") \
        else os.path.join(PACKAGE, *rel[:-1], rel[-1] + ".pyi")
    with open(path) as f:
        tree = ast.parse(f.read())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names if a.asname)
    return names


def test_py_typed_and_every_public_name_has_a_stub():
    assert os.path.exists(os.path.join(PACKAGE, "py.typed"))
    for module in MODULES:
        if module.endswith("torch"):
            pytest.importorskip("torch", reason="torch is not installed: its modules' stubs are checked where it is")
        m = importlib.import_module(module)
        public = getattr(m, "__all__", None) or [n for n in vars(m) if not n.startswith("_")]
        missing = sorted(n for n in public if callable(getattr(m, n)) and n not in stub_names(module))
        assert not missing, f"{module}: no stub for {missing}"


def _mypy():
    return pytest.importorskip("mypy", reason="mypy is not installed: the examples are type-checked where it is")


def test_mypy_strict_on_the_examples(tmp_path):
    _mypy()
    files = [os.path.join(EXAMPLES, f) for f in sorted(os.listdir(EXAMPLES)) if f.endswith(".py")]
    try:
        import torch  # noqa: F401
    except ImportError:
        files = [f for f in files if not f.endswith("torch_model.py")]
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                          *files], capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout


def test_a_type_error_is_found(tmp_path):
    """The check can fail: a wrong use of the API is reported."""
    _mypy()
    bad = tmp_path / "bad.py"
    bad.write_text("import ztensor_c.numpy\nx: int = ztensor_c.numpy.load_file('a')\n"
                   "import ztensor_c\ny: str = ztensor_c.Reader('x').tensor('a').shape\n")
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                          str(bad)], capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert out.returncode == 1 and out.stdout.count("error: Incompatible types in assignment") == 2, out.stdout


@pytest.mark.parametrize("example", ["safetensors_api.py", "reader_writer.py", "reference_v2.py", "torch_model.py"])
def test_the_examples_run(tmp_path, example):
    if example.startswith("torch"):
        pytest.importorskip("torch", reason="torch is not installed")
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, example), str(tmp_path)], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
