"""PEP 517 backend of ztensor-c: maturin's, with the C declarations cffi needs.

maturin (bindings = "cffi") builds the Rust library as a cdylib, puts it in the wheel, and
compiles C declarations with cffi into ztensor_c/_native/ffi.py (out-of-line ABI mode: no
C compiler, no Python extension). It takes those declarations from `<cargo target
dir>/header.h` when that file exists, else from its own cbindgen run, which can't be used
here: include/ztensor.h is written for C and C++ compilers (#if blocks, the ZT_API
visibility macro) and cffi's parser takes plain declarations only. The library's build.rs
generates plain ones with a second cbindgen configuration (ztensor_cffi.h beside this
file, committed; a Rust test checks it is current). So before each wheel build this writes
header.h from it and the DLPack structs (dlpack_cdef.py), into the target directory cargo
metadata names (the one maturin uses: CARGO_TARGET_DIR and cargo's configuration count),
and then calls maturin. Every other hook is maturin's own.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys

import maturin
from maturin import (  # noqa: F401  (the hooks this backend passes through unchanged)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlpack_cdef  # noqa: E402


def _crate_root():
    """The directory of the Cargo.toml that pyproject.toml's manifest-path names."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
    with open(os.path.join(here, "pyproject.toml"), "rb") as f:
        text = f.read().decode("utf-8")
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "manifest-path":
            return os.path.dirname(os.path.normpath(os.path.join(here, value.strip().strip('"'))))
    return here


def _target_dir(root):
    cargo = os.environ.get("CARGO", shutil.which("cargo") or "cargo")
    try:
        out = subprocess.run(
            [cargo, "metadata", "--format-version", "1", "--no-deps",
             "--manifest-path", os.path.join(root, "Cargo.toml")],
            check=True, capture_output=True, cwd=root, stdin=subprocess.DEVNULL).stdout
    except FileNotFoundError:
        raise RuntimeError("ztensor-c: cargo not found. The package compiles the ztensor Rust "
                           "library: install Rust (https://rustup.rs) or put cargo on PATH")
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"ztensor-c: cargo metadata failed:\n{e.stderr.decode(errors='replace')}")
    return json.loads(out)["target_directory"]


def _write_cffi_header():
    root = _crate_root()
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ztensor_cffi.h")
    with open(source, encoding="utf-8") as f:
        text = f.read() + dlpack_cdef.DECLARATIONS
    target = _target_dir(root)
    os.makedirs(target, exist_ok=True)
    path = os.path.join(target, "header.h")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _pyproject_value(key):
    """A string value of pyproject.toml's [tool.maturin] (a line `key = "value"`)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(here, "pyproject.toml"), "rb") as f:
        text = f.read().decode("utf-8")
    section = None
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("["):
            section = line
        elif section == "[tool.maturin]" and line.partition("=")[0].strip() == key:
            return line.partition("=")[2].strip().strip('"')
    return None


def _manylinux(config_settings):
    """maturin's PEP 517 hook builds with `--compatibility off` (a wheel tagged
    linux_<arch>, linked against the build machine's glibc, neither zig nor pyproject's
    compatibility used) unless its build arguments name one: so `pip wheel ./python` would
    make a wheel PyPI refuses. On Linux this passes pyproject's compatibility and zig
    along with the arguments given (config settings, else MATURIN_PEP517_ARGS, which a
    config setting would otherwise hide); the caller's own --compatibility wins."""
    settings = dict(config_settings or {})
    key = "maturin.build-args" if "maturin.build-args" in settings else "build-args"
    given = settings.get(key)
    if given is None:
        args = shlex.split(os.environ.get("MATURIN_PEP517_ARGS", ""))
    elif isinstance(given, str):
        args = shlex.split(given)
    else:
        args = list(given)
    named = any(a.split("=", 1)[0] in ("--compatibility", "--manylinux") for a in args)
    compatibility = _pyproject_value("compatibility")
    if sys.platform.startswith("linux") and not named and compatibility:
        args += ["--compatibility", compatibility]
        if _pyproject_value("zig") == "true" and "--zig" not in args:
            args.append("--zig")
    settings[key] = args
    return settings


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _write_cffi_header()
    return maturin.build_wheel(wheel_directory, _manylinux(config_settings), metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _write_cffi_header()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)
