"""DLPack export: `__dlpack__` capsules over memory the package keeps alive.

The structs (DLManagedTensorVersioned, DLManagedTensor, DLTensor ...) are declared in the
cffi module the build compiles (build_backend/dlpack_cdef.py), written from the DLPack
specification. Rules followed (DLPack's python_spec):

- A capsule is named "dltensor_versioned" (DLPack >= 1.0, when the consumer passes
  max_version >= (1, 0)) or "dltensor" (the legacy struct, for older consumers).
- A consumer renames the capsule to "used_dltensor[_versioned]" and calls the struct's
  deleter when it is done. A capsule never consumed calls the deleter from its own
  destructor (it still has its original name then). The deleter runs once either way,
  from any thread, with or without the GIL (cffi's callback takes it).
- The struct, its shape array and the object owning the data (a NumPy array, which keeps
  the reader and its mapping alive) live in a table until the deleter runs.
- Read-only memory (views of a mapped file, a reader's decoded copies) is flagged
  DLPACK_FLAG_BITMASK_READ_ONLY in the versioned struct; the legacy struct has no flags,
  so a legacy consumer can't know (see the README).
"""

import ctypes
import threading

from ._lib import ffi

DLPACK_VERSION = (1, 1)  # the fp8 and packed fp4/fp6 type codes came with 1.1
FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
KDL_CPU = 1

_VERSIONED = b"dltensor_versioned"
_LEGACY = b"dltensor"

_live = {}  # address of a struct -> (struct cdata, shape cdata, owner)
_live_lock = threading.RLock()  # re-entrant: a collection inside may run a destructor


def _release(address):
    with _live_lock:
        _live.pop(address, None)


def _address(pointer, _cast=ffi.cast, _int=int):
    return _int(_cast("uintptr_t", pointer))


def _immortal(obj):
    """Keeps `obj` alive until the process ends: a capsule's deleter may run during the
    interpreter's shutdown, after the garbage collector has cleared unreachable functions
    (a cleared function has no globals and no closure left, and calling it crashes;
    seen on free-threaded CPython 3.14). The one reference no collector sees keeps each
    callback, its function and what the function's closure holds reachable."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    return obj


def _callbacks(live, lock, is_valid, pointer, names, address_of):
    """The C callbacks of the capsules: closures that look up no global or builtin name
    (module dicts are emptied during shutdown); `live` is keyed by the struct's address."""

    def release(managed):
        key = address_of(managed)
        with lock:
            live.pop(key, None)

    def destroy(capsule):
        # The capsule is being destroyed: no Python reference to it may be made.
        try:
            for name in names:
                if is_valid(capsule, name):  # not consumed: the deleter is ours to call
                    key = pointer(capsule, name)
                    with lock:
                        live.pop(key, None)
                    return
        except BaseException:  # pragma: no cover - nothing may escape a destructor
            pass

    return release, destroy


# Private prototypes of the C API calls (the shared ctypes.pythonapi attributes are left
# as they are: other code may set their argtypes differently).
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

_release_struct, _destroy = _callbacks(_live, _live_lock, _capsule_is_valid, _capsule_pointer,
                                       (_VERSIONED, _LEGACY), _address)
_delete_versioned = _immortal(ffi.callback("void(DLManagedTensorVersioned *)", _release_struct))
_delete_legacy = _immortal(ffi.callback("void(DLManagedTensor *)", _release_struct))
_destroy_capsule = _immortal(ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_destroy))
_DESTROY = ctypes.cast(_destroy_capsule, ctypes.c_void_p).value


def capsule(data_address, shape, code, bits, owner, *, read_only, copied=False, versioned=True,
            version=DLPACK_VERSION):
    """A DLPack capsule of a C-contiguous CPU tensor at `data_address` of `shape`, whose
    elements have DLPack type `code` and `bits`. `owner` is kept alive until the consumer
    is done with the memory."""
    ndim = len(shape)
    shape_c = ffi.new("int64_t[]", list(shape)) if ndim else ffi.NULL
    if versioned:
        managed = ffi.new("DLManagedTensorVersioned *")
        managed.version.major, managed.version.minor = version
        managed.deleter = _delete_versioned
        managed.flags = (FLAG_READ_ONLY if read_only else 0) | (FLAG_IS_COPIED if copied else 0)
    else:
        managed = ffi.new("DLManagedTensor *")
        managed.deleter = _delete_legacy
    t = managed.dl_tensor
    t.data = ffi.cast("void *", data_address)
    t.device.device_type = KDL_CPU
    t.device.device_id = 0
    t.ndim = ndim
    t.dtype.code = code
    t.dtype.bits = bits
    t.dtype.lanes = 1
    t.shape = shape_c
    t.strides = ffi.NULL  # compact, row-major
    t.byte_offset = 0
    address = _address(managed)
    with _live_lock:
        _live[address] = (managed, shape_c, owner)
    try:
        return _capsule_new(address, _VERSIONED if versioned else _LEGACY, _DESTROY)
    except BaseException:
        _release(address)
        raise


def live_count():
    """How many exported tensors have not been released yet (for tests)."""
    with _live_lock:
        return len(_live)
