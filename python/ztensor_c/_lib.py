"""The C library, and its errors as Python exceptions.

`ffi` and `lib` come from ztensor_c/_native, which the build generates: an out-of-line
cffi module in ABI mode (ffi.py, compiled from the declarations build.rs generates beside
include/ztensor.h) and the bundled library. The package calls `lib.zt_*` by the C API's
names (its current ones only: docs/c-api.md, "Names"), and `check` / `error` turn a
failed call's status, message and OS error number into an exception. cffi releases the
GIL around every C call, so reads and decodes run while other Python threads do.
"""

import os
import sys

from ._native import ffi, lib


# --- errors ----------------------------------------------------------------------------
class SafetensorError(Exception):
    """The exception safetensors raises, by its name: the base class of every error of
    this package, so code written for safetensors (`except SafetensorError`) catches a
    bad file and a missing tensor from ours as it does from safetensors. Raised as
    itself where safetensors raises it for a reason the library has no status for (an
    index its slicer refuses)."""


class ZtError(SafetensorError):
    """A failed call of the ztensor library.

    `status` is the zt_status value, `status_name` its name ("ZT_ERR_FORMAT") and
    `message` the library's explanation (file, object, offset ...). Every error also
    derives from the built-in exception Python code expects for it: KeyError for a name
    that isn't there, OSError for the operating system's refusals, ValueError for a
    malformed file or a bad argument.
    """

    def __init__(self, status, message):
        self.status = status
        self.status_name = ffi.string(lib.zt_status_name(status)).decode()
        self.message = message
        super().__init__(message)

    def __str__(self):
        return f"{self.message} ({self.status_name})"


class InvalidArgumentError(ZtError, ValueError):
    """ZT_ERR_INVALID_ARGUMENT: a call the data contradicts (wrong size, dtype, shape)."""


class ZtOSError(ZtError, OSError):
    """ZT_ERR_IO: the operating system or a server refused (missing file, permission,
    disk full, HTTP 404). `errno` is the system's error number (zt_last_os_error), None
    when the refusal had none (a server's)."""

    def __init__(self, status, message):
        ZtError.__init__(self, status, message)
        self.errno = None
        self.strerror = message

    def __str__(self):
        return ZtError.__str__(self)


class FormatError(ZtError, ValueError, RuntimeError):
    """ZT_ERR_FORMAT: the file is malformed, truncated or inconsistent. A ValueError, as
    Python code expects of bad data, and a RuntimeError, as the reference package raised
    for a corrupted file."""


class UnsupportedError(ZtError, ValueError):
    """ZT_ERR_UNSUPPORTED: well-formed, but not something this build does."""


class NotFoundError(ZtError, KeyError):
    """ZT_ERR_NOT_FOUND: no such object, component or attribute."""

    def __str__(self):
        return ZtError.__str__(self)


class ChecksumError(ZtError, ValueError):
    """ZT_ERR_CHECKSUM: a stored digest does not match the bytes."""


class LimitError(ZtError, ValueError):
    """ZT_ERR_LIMIT: a safety limit was hit (see the C API's limits)."""


class BufferTooSmallError(ZtError, ValueError):
    """ZT_ERR_BUFFER_TOO_SMALL: a destination smaller than the data."""


class StateError(ZtError, RuntimeError):
    """ZT_ERR_STATE: not valid now (a writer after finish, or one that failed)."""


class InternalError(ZtError, RuntimeError):
    """ZT_ERR_INTERNAL: a bug in the library; please report it."""


class CanceledError(ZtError, RuntimeError):
    """ZT_ERR_CANCELED: the work was canceled (a loader's zt_loader_cancel)."""


_ERRORS = {
    lib.ZT_ERR_INVALID_ARGUMENT: InvalidArgumentError,
    lib.ZT_ERR_IO: ZtOSError,
    lib.ZT_ERR_FORMAT: FormatError,
    lib.ZT_ERR_UNSUPPORTED: UnsupportedError,
    lib.ZT_ERR_NOT_FOUND: NotFoundError,
    lib.ZT_ERR_CHECKSUM: ChecksumError,
    lib.ZT_ERR_LIMIT: LimitError,
    lib.ZT_ERR_BUFFER_TOO_SMALL: BufferTooSmallError,
    lib.ZT_ERR_STATE: StateError,
    lib.ZT_ERR_INTERNAL: InternalError,
    lib.ZT_ERR_CANCELED: CanceledError,
}

# OSError subclasses by errno, each also a ZtOSError: FileNotFoundError for ENOENT ...
_OS_ERRORS = {}


def _os_error_class(number):
    if not number:
        return ZtOSError
    cls = _OS_ERRORS.get(number)
    if cls is None:
        builtin = type(OSError(number, ""))
        if builtin is OSError:
            cls = ZtOSError
        else:
            cls = type(builtin.__name__, (ZtOSError, builtin), {"__module__": __name__})
        _OS_ERRORS[number] = cls
    return cls


def error(status):
    """The exception for a failed call: read zt_last_error() right after the call, on the
    same thread (it is per OS thread, and a Python thread is one)."""
    message = ffi.string(lib.zt_last_error()).decode("utf-8", "replace")
    cls = _ERRORS.get(status, ZtError)
    if cls is ZtOSError:
        number = lib.zt_last_os_error()  # read before anything else calls the library
        e = _os_error_class(number)(status, message)
        e.errno = number or None
        return e
    return cls(status, message)


def check(status):
    """Raises the error of a failed call; nothing for ZT_OK."""
    if status:
        raise error(status)


def fspath(path):
    """A path or URL as the bytes the C API takes (a str as os.fsencode encodes it)."""
    if type(path) is str:
        return path.encode(_FS_ENCODING, _FS_ERRORS)
    if isinstance(path, bytes):
        return path
    path = os.fspath(path)
    if isinstance(path, bytes):
        return path
    return os.fsencode(path)


_FS_ENCODING = sys.getfilesystemencoding()
_FS_ERRORS = sys.getfilesystemencodeerrors()
