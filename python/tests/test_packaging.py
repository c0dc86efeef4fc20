"""The package itself: the cffi declarations build.rs generates beside the header, the
installed wheel's tag and contents, the library it loads."""

import importlib.metadata
import os
import re
import sys

import pytest

import ztensor_c
from ztensor_c import _lib
from ztensor_c._lib import ffi, lib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python", "build_backend"))
import dlpack_cdef  # noqa: E402

HEADER = os.path.join(REPO, "include", "ztensor.h")
CFFI = os.path.join(REPO, "python", "build_backend", "ztensor_cffi.h")


def declared_functions(text):
    return sorted(set(re.findall(r"\b(zt_[a-z0-9_]+)\s*\(", re.sub(r"/\*.*?\*/", "", text, flags=re.S))))


def declared_constants(text):
    return sorted(set(re.findall(r"^#define (ZT_[A-Z0-9_]+) -?\d+$", text, flags=re.M)))


def test_every_function_of_the_header_is_callable():
    with open(HEADER) as f:
        names = declared_functions(f.read())
    assert len(names) > 80 and "zt_file_get_names" in names and "zt_last_os_error" in names
    for name in names:
        assert callable(getattr(lib, name)), name  # declared to cffi and found in the library


def test_cffi_declarations_are_the_headers():
    """The second cbindgen configuration gives the header's functions and integer
    constants, nothing cffi's parser refuses, and no preprocessor of our own is involved."""
    with open(HEADER) as f:
        header = f.read()
    with open(CFFI) as f:
        cdef = f.read()
    assert declared_functions(cdef) == declared_functions(header)
    assert declared_constants(cdef) == declared_constants(header)
    assert "#if" not in cdef and "ZT_API" not in cdef and "extern \"C\"" not in cdef
    assert "ZT_DEPRECATED" not in cdef and "#include" not in cdef
    assert "#define ZT_OPEN_COPY_ON_WRITE 1024" in cdef
    assert not os.path.exists(os.path.join(REPO, "python", "build_backend", "cffi_header.py"))
    import cffi

    cffi.FFI().cdef(cdef + dlpack_cdef.DECLARATIONS)  # cffi's own parser takes it


def test_version_and_library():
    number = _lib.lib.zt_version_number()
    major, minor, patch = (int(x) for x in ztensor_c.__version__.split("."))
    assert number == major * 10000 + minor * 100 + patch
    assert ffi.sizeof("zt_view") == 24
    # the DLPack ABI on 64-bit platforms (dlpack.h)
    assert (ffi.sizeof("DLTensor"), ffi.sizeof("DLManagedTensor"), ffi.sizeof("DLManagedTensorVersioned")) == (48, 64, 80)
    assert ffi.offsetof("DLManagedTensorVersioned", "dl_tensor") == 32


def test_installed_wheel():
    try:
        dist = importlib.metadata.distribution("ztensor-c")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ztensor-c is not installed (tests run from the source tree)")
    assert dist.version == ztensor_c.__version__  # the wheel's version is the library's
    wheel = dist.read_text("WHEEL")
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    assert tags and all(t.startswith("py3-none-") for t in tags), tags  # one wheel for every CPython
    if sys.platform.startswith("linux"):  # one PyPI takes (auditwheel checked it at build)
        assert all(t.startswith("py3-none-manylinux_2_28_") for t in tags), tags
    files = [str(f) for f in dist.files]
    assert any(re.fullmatch(r"ztensor_c/_native/lib_native\.(so|dylib)|ztensor_c/_native/_native\.dll", f)
               for f in files), files
    assert "ztensor_c/_native/ffi.py" in files
    assert not any(f.endswith((".pyd",)) or re.search(r"\.cpython-.*\.so$", f) for f in files)
    requires = dist.requires or []
    assert any(r.startswith("cffi") for r in requires) and any(r.startswith("numpy") for r in requires)
    assert os.path.dirname(ztensor_c.__file__) == os.path.join(str(dist.locate_file("")), "ztensor_c")


def test_import_is_light():
    """`import ztensor_c` imports numpy and cffi only: ml_dtypes (most of a second), scipy
    and torch come on first need (a bf16 array, a sparse object, a torch call)."""
    import subprocess

    code = ("import sys, ztensor_c, ztensor_c.numpy; "
            "print(sorted(m for m in ('ml_dtypes', 'scipy', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    # nor does reading a tensor of a dtype NumPy has
    code = ("import sys, numpy as np, ztensor_c; "
            "r = ztensor_c.Reader.from_bytes(ztensor_c.numpy.save({'x': np.zeros(2, np.uint16)})); "
            "assert 'ml_dtypes' not in sys.modules; "
            "t = r.tensor('x'); print(t.dtype, 'ml_dtypes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "uint16 False", out.stdout + out.stderr
