"""The package itself: the cffi declarations made from include/ztensor.h, the installed
wheel's tag and contents, the library it loads."""

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
import cffi_header  # noqa: E402

HEADER = os.path.join(REPO, "include", "ztensor.h")


def declared_functions(text):
    return sorted(set(re.findall(r"\b(zt_[a-z0-9_]+)\s*\(", re.sub(r"/\*.*?\*/", "", text, flags=re.S))))


def test_every_function_of_the_header_is_callable():
    with open(HEADER) as f:
        names = declared_functions(f.read())
    assert len(names) > 80 and "zt_file_get_names" in names
    for name in names:
        assert callable(getattr(lib, name)), name  # declared to cffi and found in the library


def test_cdef_of_the_header_keeps_every_declaration():
    with open(HEADER) as f:
        header = f.read()
    cdef = cffi_header.cdef_from_header(header)
    assert declared_functions(cdef) == declared_functions(header)
    assert "#if" not in cdef and "ZT_API" not in cdef and "extern \"C\"" not in cdef
    assert "#define ZT_OPEN_VERIFY 2" in cdef
    assert "DLManagedTensorVersioned" in cdef
    import cffi

    cffi.FFI().cdef(cdef)  # cffi's own parser takes it


def test_cdef_transform_rules():
    header = """
#ifndef GUARD
#define GUARD
#include <stdint.h>
#define ZT_API __attribute__((visibility("default")))
#define ZT_DEPRECATED(msg) __attribute__((deprecated(msg)))
#define ZT_SIX (1 << 2)
#define ZT_SEVEN 7u
#if defined(_WIN32) && !defined(ZT_STATIC)
int windows_only(void);
#elif defined(GUARD) || 0
int posix(void); /* kept */
#else
int never(void);
#endif
#ifdef __cplusplus
extern "C" {
#endif
ZT_API ZT_DEPRECATED("use zt_new") int zt_old(int (*cb)(int), const char *s);
ZT_API int zt_new(void); // the new one
#ifdef __cplusplus
}
#endif
#endif
"""
    cdef = cffi_header.cdef_from_header(header)
    body = cdef.split("typedef struct { uint32_t major;")[0]
    assert "int posix(void);" in body and "windows_only" not in body and "never" not in body
    assert "int zt_old(int (*cb)(int), const char *s);" in body
    assert "int zt_new(void);" in body and "ZT_" + "API" not in body and "deprecated" not in body
    assert "#define ZT_SEVEN 7" in body and "ZT_SIX" not in body and "extern" not in body
    with pytest.raises(ValueError, match="error"):
        cffi_header.cdef_from_header("#error not for you\n")
    with pytest.raises(ValueError, match="unterminated"):
        cffi_header.cdef_from_header("#ifdef X\nint a;\n")


def test_version_and_library():
    number = _lib.version_number()
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
    files = [str(f) for f in dist.files]
    assert any(re.fullmatch(r"ztensor_c/_native/lib_native\.(so|dylib)|ztensor_c/_native/_native\.dll", f)
               for f in files), files
    assert "ztensor_c/_native/ffi.py" in files
    assert not any(f.endswith((".pyd",)) or re.search(r"\.cpython-.*\.so$", f) for f in files)
    requires = dist.requires or []
    assert any(r.startswith("cffi") for r in requires) and any(r.startswith("numpy") for r in requires)
    assert os.path.dirname(ztensor_c.__file__) == os.path.join(str(dist.locate_file("")), "ztensor_c")
