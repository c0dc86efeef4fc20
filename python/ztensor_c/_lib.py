"""Every call into the C library goes through this module.

`ffi` and `lib` come from ztensor_c/_native, which the build generates: an out-of-line
cffi module in ABI mode (ffi.py, compiled from include/ztensor.h) and the bundled library.
cffi releases the GIL around every C call, so reads and decodes run while other Python
threads do.

The package calls the C API's current names only (docs/c-api.md, "Names"); the deprecated
old names stay in the library for C programs, never here.
"""

import errno as _errno
import os
import re
import sys

from ._native import ffi, lib


# --- library ------------------------------------------------------------------------
version = lib.zt_version
version_number = lib.zt_version_number
status_name = lib.zt_status_name
last_error = lib.zt_last_error
dtype_name = lib.zt_dtype_name
dtype_get_size = lib.zt_dtype_get_size

# --- open / close --------------------------------------------------------------------
open_with = lib.zt_open_with
open_memory_with = lib.zt_open_memory_with
open_url_with = lib.zt_open_url_with
close = lib.zt_close

# --- what is in the file ---------------------------------------------------------------
file_format = lib.zt_file_format
file_version = lib.zt_file_version
file_get_names = lib.zt_file_get_names
file_get_objects = lib.zt_file_get_objects
file_get_columns = lib.zt_file_get_columns
file_get_runs = lib.zt_file_get_runs
object_count = lib.zt_object_count
object_find = lib.zt_object_find
object_get_info = lib.zt_object_get_info
object_get_quant_info = lib.zt_object_get_quant_info
component_find = lib.zt_component_find
component_get_info = lib.zt_component_get_info
component_get_location = lib.zt_component_get_location
shard_count = lib.zt_shard_count
shard_get_path = lib.zt_shard_get_path
shard_get_mapping = lib.zt_shard_get_mapping
file_get_remote_stats = lib.zt_file_get_remote_stats

# --- the bytes -------------------------------------------------------------------------
component_view = lib.zt_component_view
component_read = lib.zt_component_read
component_read_as = lib.zt_component_read_as
component_read_range = lib.zt_component_read_range
component_read_as_range = lib.zt_component_read_as_range
batch_load = lib.zt_batch_load
file_verify = lib.zt_file_verify
component_verify = lib.zt_component_verify
object_validate = lib.zt_object_validate

# --- attributes ------------------------------------------------------------------------
def file_get_attributes(reader, out):
    return lib.zt_file_get_attributes(reader, out)


def object_get_attributes(reader, index, out):
    return lib.zt_object_get_attributes(reader, index, out)


def file_get_attributes_json(reader, out):
    return lib.zt_file_get_attributes_json(reader, out)


def object_get_attributes_json(reader, index, out):
    return lib.zt_object_get_attributes_json(reader, index, out)


value_get_type = lib.zt_value_get_type
value_type_name = lib.zt_value_type_name
value_get_bool = lib.zt_value_get_bool
value_get_i64 = lib.zt_value_get_i64
value_get_u64 = lib.zt_value_get_u64
value_get_f64 = lib.zt_value_get_f64
value_get_string = lib.zt_value_get_string
value_get_bytes = lib.zt_value_get_bytes
value_get_count = lib.zt_value_get_count
value_get_array_type = lib.zt_value_get_array_type
value_get_array_data = lib.zt_value_get_array_data
value_get_element = lib.zt_value_get_element
value_get_element_string = lib.zt_value_get_element_string
value_get_entry = lib.zt_value_get_entry

# --- writing ---------------------------------------------------------------------------
writer_create_with = lib.zt_writer_create_with
writer_create_sharded_with = lib.zt_writer_create_sharded_with
writer_add = lib.zt_writer_add
writer_begin_object = lib.zt_writer_begin_object
writer_add_component = lib.zt_writer_add_component
writer_end_object = lib.zt_writer_end_object
writer_set_attributes_json = lib.zt_writer_set_attributes_json
writer_finish = lib.zt_writer_finish
writer_free = lib.zt_writer_free

# --- constants -------------------------------------------------------------------------
OK = lib.ZT_OK
ERR_INVALID_ARGUMENT = lib.ZT_ERR_INVALID_ARGUMENT
ERR_IO = lib.ZT_ERR_IO
ERR_FORMAT = lib.ZT_ERR_FORMAT
ERR_UNSUPPORTED = lib.ZT_ERR_UNSUPPORTED
ERR_NOT_FOUND = lib.ZT_ERR_NOT_FOUND
ERR_CHECKSUM = lib.ZT_ERR_CHECKSUM
ERR_LIMIT = lib.ZT_ERR_LIMIT
ERR_BUFFER_TOO_SMALL = lib.ZT_ERR_BUFFER_TOO_SMALL
ERR_STATE = lib.ZT_ERR_STATE
ERR_INTERNAL = lib.ZT_ERR_INTERNAL
ERR_CANCELED = lib.ZT_ERR_CANCELED
ENCODING_RAW = lib.ZT_ENCODING_RAW
ENCODING_ZSTD = lib.ZT_ENCODING_ZSTD
DIGEST_NONE = lib.ZT_DIGEST_NONE
DIGEST_SHA256 = lib.ZT_DIGEST_SHA256
DIGEST_CRC32C = lib.ZT_DIGEST_CRC32C
OPEN_NO_MMAP = lib.ZT_OPEN_NO_MMAP
OPEN_VERIFY = lib.ZT_OPEN_VERIFY
OPEN_POPULATE = lib.ZT_OPEN_POPULATE
OPEN_ALL_SHARDS = lib.ZT_OPEN_ALL_SHARDS
OPEN_ONE_FILE = lib.ZT_OPEN_ONE_FILE
WRITER_NO_SYNC = lib.ZT_WRITER_NO_SYNC
LOAD_RANGE = lib.ZT_LOAD_RANGE
LOAD_CONVERT = lib.ZT_LOAD_CONVERT
REMOTE_ALLOW_HTTP = lib.ZT_REMOTE_ALLOW_HTTP
OBJECT_DENSE = lib.ZT_OBJECT_DENSE
OBJECT_PLAIN = lib.ZT_OBJECT_PLAIN
OBJECT_TYPED = lib.ZT_OBJECT_TYPED


# --- errors ----------------------------------------------------------------------------
class ZtError(Exception):
    """A failed call of the ztensor library.

    `status` is the zt_status value, `status_name` its name ("ZT_ERR_FORMAT") and
    `message` the library's explanation (file, object, offset ...). Every error also
    derives from the built-in exception Python code expects for it: KeyError for a name
    that isn't there, OSError for the operating system's refusals, ValueError for a
    malformed file or a bad argument.
    """

    def __init__(self, status, message):
        self.status = status
        self.status_name = ffi.string(status_name(status)).decode()
        self.message = message
        super().__init__(message)

    def __str__(self):
        return f"{self.message} ({self.status_name})"


class InvalidArgumentError(ZtError, ValueError):
    """ZT_ERR_INVALID_ARGUMENT: a call the data contradicts (wrong size, dtype, shape)."""


class ZtOSError(ZtError, OSError):
    """ZT_ERR_IO: the operating system or a server refused (missing file, permission,
    disk full, HTTP 404). `errno` is set when the library's message carries one."""

    def __init__(self, status, message):
        ZtError.__init__(self, status, message)
        m = re.search(r"\(os error (\d+)\)", message)
        self.errno = int(m.group(1)) if m else None
        self.strerror = message

    def __str__(self):
        return ZtError.__str__(self)


class FormatError(ZtError, ValueError):
    """ZT_ERR_FORMAT: the file is malformed, truncated or inconsistent."""


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
    ERR_INVALID_ARGUMENT: InvalidArgumentError,
    ERR_IO: ZtOSError,
    ERR_FORMAT: FormatError,
    ERR_UNSUPPORTED: UnsupportedError,
    ERR_NOT_FOUND: NotFoundError,
    ERR_CHECKSUM: ChecksumError,
    ERR_LIMIT: LimitError,
    ERR_BUFFER_TOO_SMALL: BufferTooSmallError,
    ERR_STATE: StateError,
    ERR_INTERNAL: InternalError,
    ERR_CANCELED: CanceledError,
}

# OSError subclasses by errno, each also a ZtOSError: FileNotFoundError for ENOENT ...
_OS_ERRORS = {}


def _os_error_class(number):
    if number is None:
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
    message = ffi.string(last_error()).decode("utf-8", "replace")
    cls = _ERRORS.get(status, ZtError)
    if cls is ZtOSError:
        m = re.search(r"\(os error (\d+)\)", message)
        cls = _os_error_class(int(m.group(1)) if m else None)
    return cls(status, message)


def check(status):
    """Raises the error of a failed call; nothing for ZT_OK."""
    if status != OK:
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

ENOENT = _errno.ENOENT
