#!/usr/bin/env python3
"""The package's test suite on a free-threaded CPython (ctest's python_free_threaded).

    python free_threaded.py FT_PYTHON VENV DIST

FT_PYTHON: a free-threaded CPython (3.13t or later; `python3.14t`), or empty: then the
test is skipped (exit 77), saying so. VENV: a venv made with it (reused while its pins
are unchanged). DIST: where `python wheel.py build` put the wheel (the same
py3-none-<platform> file every CPython installs).

Installs the wheel and the pinned runtime and test packages (requirements-ft.txt: the
GIL build's pins, less the reference package, which has no free-threaded wheel),
checks that the interpreter runs without the GIL and that importing the package (cffi's
backend, numpy and ours) does not turn it back on (CPython re-enables the GIL, with a
warning, when an extension module does not declare free-threading support), then runs
the whole suite with the GIL off (-X gil=0 would hide such a module: it is not passed).
The thread tests (tests/test_threads.py) then run their 8 loader threads truly in
parallel.
"""

import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SKIP = 77


def run(*args, **kwargs):
    print("+", " ".join(args), flush=True)
    return subprocess.run(args, check=True, stdin=subprocess.DEVNULL, **kwargs)


def pins(name):
    """The pins of a requirements file, parsed as make_venv.py (which installs them) does."""
    spec = importlib.util.spec_from_file_location(
        "make_venv", os.path.join(REPO, "tests", "languages", "make_venv.py"))
    make_venv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_venv)
    return make_venv.pins(os.path.join(HERE, name))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    python, venv, dist = sys.argv[1:]
    if not python:
        print("skipped: no free-threaded CPython here (configure with "
              "-DZTENSOR_FREE_THREADED_PYTHON=/path/to/python3.14t, or set "
              "ZT_FREE_THREADED_PYTHON; .ci/run builds one from CPython's sources)")
        return SKIP
    probe = subprocess.run([python, "-c", "import sys, sysconfig; "
                            "print(sysconfig.get_config_var('Py_GIL_DISABLED'), sys._is_gil_enabled())"],
                           capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.split() != ["1", "False"]:
        sys.exit(f"{python} is not a free-threaded CPython running without the GIL "
                 f"(Py_GIL_DISABLED, GIL enabled: {probe.stdout.strip() or probe.stderr.strip()})")
    ft, gil = pins("requirements-ft.txt"), pins("requirements.txt")
    drift = {k: (v, gil.get(k)) for k, v in ft.items() if gil.get(k) != v}
    if drift:
        sys.exit(f"requirements-ft.txt differs from requirements.txt: {drift}")
    wheels = [f for f in os.listdir(dist) if f.startswith("ztensor_c-") and f.endswith(".whl")]
    if len(wheels) != 1:
        sys.exit(f"expected one ztensor_c wheel in {dist}, found {wheels}")
    wheel = os.path.join(dist, wheels[0])
    run(python, os.path.join(REPO, "tests", "languages", "make_venv.py"), venv,
        os.path.join(HERE, "requirements-ft.txt"))
    vpython = os.path.join(venv, "bin", "python")
    run(vpython, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
        "--no-deps", "--force-reinstall", "--quiet", wheel)
    check = ("import sys, warnings\n"
             "warnings.simplefilter('error')\n"
             "import numpy, cffi, ztensor_c, ztensor_c.numpy, ztensor_c._native\n"
             "assert not sys._is_gil_enabled(), 'importing ztensor_c enabled the GIL'\n"
             "print('free-threaded:', sys.version, '- GIL off after import ztensor_c', ztensor_c.__version__)\n")
    run(vpython, "-c", check)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHON_GIL", None)
    run(vpython, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", HERE, env=env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
