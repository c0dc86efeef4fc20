"""Writer: zTensor (v2 by default, or 1.2), safetensors and GGUF files from NumPy arrays,
torch tensors and SciPy matrices, through the library's writer."""

import json
import threading

import numpy as np

from . import _dtypes, _lib
from ._lib import StateError, ffi, lib

_DIGESTS = {"none": lib.ZT_DIGEST_NONE, None: lib.ZT_DIGEST_NONE, "sha256": lib.ZT_DIGEST_SHA256,
            "crc32c": lib.ZT_DIGEST_CRC32C, "xxh3": lib.ZT_DIGEST_XXH3}


def _write_options(compress, checksum):
    o = ffi.new("zt_write_options *")
    if compress is None or compress is False or compress == 0:
        o.encoding = lib.ZT_ENCODING_RAW
    elif compress is True:
        o.encoding = lib.ZT_ENCODING_ZSTD  # level 0: the library's default (3)
    elif isinstance(compress, int):
        o.encoding = lib.ZT_ENCODING_ZSTD
        o.level = compress
    else:
        raise TypeError(f"compress is False, True or a zstd level, not {compress!r}")
    try:
        o.digest = _DIGESTS[checksum]
    except (KeyError, TypeError):
        raise ValueError(f"checksum is 'none', 'xxh3', 'sha256' or 'crc32c', not {checksum!r}") from None
    return o


def _c_contiguous(arr):
    """`arr`, or a C-contiguous copy (np.ascontiguousarray would make a 0-d array 1-d)."""
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _little_endian_contiguous(arr):
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and not np.little_endian):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return _c_contiguous(arr)


def _jsonable(value):
    """Attribute values as the JSON the C writer takes (bytes as {"$bytes": hex})."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


# zTensor v2 by default (what ztensor 2.x reads); "1.2" for readers of 1.x
_VERSIONS = {"2": lib.ZT_WRITER_V2, "1.2": lib.ZT_WRITER_V1_2}

# Writer(format=...): the container, by name; None goes by the path's extension
# (".safetensors" safetensors, ".gguf" GGUF, anything else zTensor)
_FORMATS = {None: lib.ZT_WRITER_FORMAT_AUTO, "zt": lib.ZT_WRITER_FORMAT_ZTENSOR,
            "safetensors": lib.ZT_WRITER_FORMAT_SAFETENSORS, "gguf": lib.ZT_WRITER_FORMAT_GGUF}


def check_metadata(metadata):
    """safetensors' rule for save_file's `metadata`: None or a dict of str to str, else
    TypeError with its message. (Writer.set_attributes takes typed values.)"""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise TypeError(f"argument 'metadata': '{type(metadata).__name__}' object is not an instance of 'dict'")
    for k, v in metadata.items():
        for x in (k, v):
            if not isinstance(x, str):
                what = "'None'" if x is None else f"'{type(x).__name__}' object"
                raise TypeError(f"argument 'metadata': {what} is not an instance of 'str'")


class Writer:
    """Writes a zTensor file: v2 by default (what ztensor 2.x reads: every blob at a
    4 KiB boundary, the spec's floor, with an xxh3 digest; ztensor_c.v2.Writer writes
    the canonical 64 KiB placement), `version="1.2"` for readers of
    zTensor 1.x (ztensor 1.x; 64-byte alignment, digests only when asked).

        with ztensor_c.Writer("model.zt") as w:
            w.add("weight", np.ones((2, 3), np.float32), compress=True, checksum="sha256")
            w.set_attributes({"model": "demo"})
        # finished on leaving the block; discarded (nothing at the path) on an exception

    `add` takes NumPy arrays of every dtype (ml_dtypes' bfloat16 and float8 types, complex
    as complex64/128), torch tensors, and SciPy sparse CSR/COO matrices and arrays.
    `compress`: False (raw), True (zstd, level 3) or a zstd level; `checksum`: "none"
    (v2 still digests with xxh3), "xxh3" (v2), "sha256", or "crc32c" (1.2 only). The
    file appears at its path only when `finish` succeeds (the bytes go to a temporary
    file beside it until then, and are fsynced unless `sync=False`).
    `max_shard_size=N` writes a sharded set instead: `<path>-0000k-of-0000n.zt` and
    `<path>.zt.index.json`. `format="safetensors"` (or "gguf", or "zt") writes that
    format whatever the path; by default a path ending in ".safetensors" is written as
    safetensors (byte for byte what safetensors' save_file writes for the same tensors),
    ".gguf" as GGUF, anything else as zTensor.
    """

    def __init__(self, path, *, sync=True, max_shard_size=None, format=None, version="2", extra_flags=0):
        if version not in _VERSIONS:
            raise ValueError(f"version is '2' or '1.2', not {version!r}")
        try:
            code = _FORMATS[format]
        except (KeyError, TypeError):
            known = ", ".join(sorted(k for k in _FORMATS if k))
            raise ValueError(f"format is one of {known} or None (by the extension), not {format!r}") from None
        options = ffi.new("zt_writer_options *")
        # the version counts only where the file is zTensor
        options.flags = ((0 if sync else lib.ZT_WRITER_NO_SYNC) | extra_flags | _VERSIONS[version]
                         | lib.ZT_WRITER_HAS_FORMAT)
        options.format = code
        self._version = version
        out = ffi.new("zt_writer **")
        if max_shard_size is None:
            _lib.check(lib.zt_writer_create_with(_lib.fspath(path), options, out))
        else:
            _lib.check(lib.zt_writer_create_sharded_with(_lib.fspath(path), int(max_shard_size),
                                                       options, out))
        self._w = ffi.gc(out[0], lib.zt_writer_free)
        self._lock = threading.Lock()  # a zt_writer is used by one thread at a time
        self._finished = False
        self._kept = []  # arrays of add_declared, read at finish

    def _writer(self):
        if self._w is None:
            raise StateError(lib.ZT_ERR_STATE, "the writer is finished" if self._finished
                             else "the writer was discarded")
        return self._w

    def add(self, name, data, compress=None, checksum="none"):
        """Adds one tensor: a NumPy array (or anything np.asarray takes), a torch tensor,
        or a SciPy sparse CSR/COO matrix or array."""
        options = _write_options(compress, checksum)
        if hasattr(data, "tocsr") and hasattr(data, "nnz"):
            return self._add_sparse(name, data, options)
        if type(data).__module__.startswith("torch"):
            from . import _torch

            arr, code, logical = _torch.raw_of(data)
        else:
            arr = _little_endian_contiguous(np.asarray(data))
            code, logical = _dtypes.from_numpy(arr.dtype)
        self._add_raw(name, "dense", arr.shape, [("data", code, logical, arr)], options)

    def add_declared(self, name, data):
        """Adds one dense tensor without copying it (zt_writer_declare_data): the writer
        keeps a reference and writes its bytes at `finish`, in the file's order, so a
        safetensors or GGUF file is written in one pass (add() spools those formats and
        copies every byte into place at finish). For a dict of tensors already in memory,
        as save_file has; the tensor must not change before `finish` returns."""
        if type(data).__module__.startswith("torch"):
            from . import _torch

            arr, code, logical = _torch.raw_of(data)
        else:
            arr = _little_endian_contiguous(np.asarray(data))
            code, logical = _dtypes.from_numpy(arr.dtype)
        self._declare(name, code, logical, arr.shape, arr)

    def add_bytes_declared(self, name, data, zt_dtype, shape, logical=None):
        """add_bytes without copying, as add_declared: `data` is kept and written at
        `finish`."""
        arr = np.frombuffer(data, np.uint8) if memoryview(data).nbytes else np.empty(0, np.uint8)
        self._declare(name, zt_dtype, logical, tuple(shape), arr)

    def _declare(self, name, code, logical, shape, arr):
        name_c = name.encode("utf-8") if isinstance(name, str) else None
        if name_c is None:
            raise TypeError(f"tensor names are str, not {type(name).__name__}")
        shape_c = ffi.new("uint64_t[]", [int(d) for d in shape]) if shape else ffi.NULL
        data = ffi.from_buffer(arr) if arr.nbytes else ffi.NULL
        with self._lock:
            _lib.check(lib.zt_writer_declare_data(
                self._writer(), name_c, ffi.NULL, code, ffi.NULL if logical is None else logical.encode(),
                shape_c, len(shape), data, arr.nbytes))
            self._kept.append(arr)  # the writer reads it at finish

    def write_numpy(self, name, data, *, compress=None, checksum="none"):
        """The reference package's name for add()."""
        self.add(name, data, compress=compress, checksum=checksum)

    def write_torch(self, name, data, *, compress=None, checksum="none"):
        """The reference package's name for add() of a torch tensor."""
        self.add(name, data, compress=compress, checksum=checksum)

    def add_bytes(self, name, data, zt_dtype, shape, logical=None, compress=None, checksum="none"):
        """Adds one dense tensor from its stored bytes (a buffer of exactly its size):
        `zt_dtype` a zt_dtype value, `logical` its logical type name or None."""
        arr = np.frombuffer(data, np.uint8) if memoryview(data).nbytes else np.empty(0, np.uint8)
        self._add_raw(name, "dense", tuple(shape), [("data", zt_dtype, logical, arr)],
                      _write_options(compress, checksum))

    def _add_sparse(self, name, matrix, options):
        fmt = matrix.format
        shape = tuple(matrix.shape)
        if fmt == "coo":
            values = _little_endian_contiguous(np.asarray(matrix.data))
            coords = np.stack([np.asarray(c, dtype=np.uint64) for c in matrix.coords]) \
                if hasattr(matrix, "coords") else np.stack([matrix.row.astype(np.uint64), matrix.col.astype(np.uint64)])
            code, logical = _dtypes.from_numpy(values.dtype)
            parts = [("values", code, logical, values),
                     ("coords", _dtypes.U64, None, _c_contiguous(coords.astype(np.uint64)))]
            return self._add_raw(name, "sparse_coo", shape, parts, options)
        csr = matrix.tocsr()
        values = _little_endian_contiguous(np.asarray(csr.data))
        code, logical = _dtypes.from_numpy(values.dtype)
        parts = [("values", code, logical, values),
                 ("indices", _dtypes.U64, None, np.ascontiguousarray(csr.indices, dtype=np.uint64)),
                 ("indptr", _dtypes.U64, None, np.ascontiguousarray(csr.indptr, dtype=np.uint64))]
        return self._add_raw(name, "sparse_csr", shape, parts, options)

    def _add_raw(self, name, fmt, shape, parts, options):
        """One object of components [(role, zt dtype, logical type, contiguous array)]."""
        name_c = name.encode("utf-8") if isinstance(name, str) else None
        if name_c is None:
            raise TypeError(f"tensor names are str, not {type(name).__name__}")
        shape_c = ffi.new("uint64_t[]", [int(d) for d in shape]) if shape else ffi.NULL
        with self._lock:
            w = self._writer()
            if fmt == "dense" and parts[0][2] is None:
                _role, code, _logical, arr = parts[0]
                data = ffi.from_buffer(arr)
                _lib.check(lib.zt_writer_add(w, name_c, code, shape_c, len(shape), data, arr.nbytes, options))
                return
            _lib.check(lib.zt_writer_begin_object(w, name_c, fmt.encode(), shape_c, len(shape)))
            for role, code, logical, arr in parts:
                data = ffi.from_buffer(arr)
                _lib.check(lib.zt_writer_add_component(
                    w, role.encode(), code, ffi.NULL if logical is None else logical.encode(),
                    data, arr.nbytes, options))
            _lib.check(lib.zt_writer_end_object(w))

    def set_attributes(self, attributes, name=None):
        """Sets the file's attributes (name=None) or an object's, from a dict of JSON-like
        values (bytes become CBOR byte strings)."""
        text = json.dumps(_jsonable(dict(attributes)), allow_nan=False).encode()
        with self._lock:
            if name is None:
                _lib.check(lib.zt_writer_set_file_attributes_json(self._writer(), text))
            else:
                _lib.check(lib.zt_writer_set_object_attributes_json(self._writer(), name.encode(), text))

    def finish(self):
        """Writes the manifest, syncs and renames the file into place."""
        with self._lock:
            w = self._writer()
            try:
                _lib.check(lib.zt_writer_finish(w))
            finally:
                self._finished = True
                self._w = None
                ffi.gc(w, None)  # freed here, not again when collected
                lib.zt_writer_free(w)
                self._kept = []

    def abandon(self):
        """Discards the file: nothing appears at the path."""
        with self._lock:
            w, self._w = self._w, None
            if w is not None:
                ffi.gc(w, None)
                lib.zt_writer_free(w)
            self._kept = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._w is not None:
            if exc_type is None:
                self.finish()
            else:
                self.abandon()
        return False

    def __repr__(self):
        return f"<ztensor_c.Writer ({'open' if self._w is not None else 'finished' if self._finished else 'discarded'})>"


def write_dict(tensors, path, metadata, compress, checksum, sync=True):
    """What numpy's and torch's save_file write: safetensors, in one pass (each tensor
    declared with its bytes, written at finish), unless `compress` or `checksum` asks
    for what only zTensor holds; `metadata` first (a safetensors header holds it)."""
    plain = compress in (None, False, 0) and checksum in ("none", None)
    with Writer(path, sync=sync, format="safetensors" if plain else "zt") as w:
        if metadata is not None:
            w.set_attributes(metadata)
        for name, value in tensors.items():
            if plain:
                w.add_declared(name, value)
            else:
                w.add(name, value, compress=compress, checksum=checksum)
