"""Reader: the reference package's reader API over the C library."""

import numpy as np

from . import _dtypes
from ._handle import Handle
from ._tensor import Tensor


class TensorMetadata:
    """What a file says about one object, without reading its data.

    `dtype` is the stored dtype of its primary component (`data` for dense tensors,
    `values` for sparse ones) in NumPy's spelling ("float32", "bfloat16", "uint8"),
    `type` the logical type when there is one ("f8_e4m3fn", "complex64", "ggml_q4_k"),
    `components` {role: {dtype, type, encoding, offset, length, decoded_length, digest}}.
    """

    __slots__ = ("name", "dtype", "type", "shape", "format", "components", "attributes")

    def __init__(self, name, dtype, shape, format, *, type=None, components=None, attributes=None):
        self.name = name
        self.dtype = dtype
        self.type = type
        self.shape = shape
        self.format = format
        self.components = components
        self.attributes = attributes

    def __eq__(self, other):
        if not isinstance(other, TensorMetadata):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self):
        logical = f" type='{self.type}'" if self.type else ""
        return (f"<TensorMetadata name='{self.name}' shape={list(self.shape)} dtype='{self.dtype}'"
                f"{logical} format='{self.format}'>")


class Reader:
    """A tensor file opened for reading: zTensor (.zt, every version), safetensors, GGUF,
    Tensogram, a set of files by its `*.index.json` or any split of a GGUF split set, or
    the URL of any of these (s3://, gs://, az://, http(s)://).

    A mapping from tensor name to value: `len(r)`, `name in r`, `for name in r`,
    `r[name]`, `r.keys()`. Values: dense tensors as NumPy arrays (read-only views of the
    file's mapping for raw data: no copy; decoded arrays for compressed data), GGUF
    block-quantized tensors dequantized to float32, sparse tensors as SciPy arrays (or
    (data, indices, indptr) tuples without SciPy), other formats as {role: array}.

    Options: `mmap=False` reads with pread (nothing is zero-copy; for files that may
    shrink while open), `verify=True` checks every digest while opening,
    `all_shards=True` maps every shard of a set at open, `one_file=True` opens one split
    of a GGUF split set alone, `remote={...}` the settings of a URL (bearer_token,
    headers, config, endpoint, allow_http, max_concurrency, retries, timeout_ms), and the
    reader's limits by name (max_total_cached=..., max_decoded_size=...).

    Errors: KeyError for a name the file lacks; OSError (FileNotFoundError ...) when the
    system refuses; ValueError for a malformed file; each carries the library's message
    and is also a `ztensor_c.ZtError` with its status.
    """

    def __init__(self, path, *, mmap=True, verify=False, populate=False, all_shards=False,
                 one_file=False, remote=None, **limits):
        self._h = Handle.open(path, mmap=mmap, verify=verify, populate=populate,
                              all_shards=all_shards, one_file=one_file, remote=remote, **limits)

    @classmethod
    def from_bytes(cls, data, **limits):
        """A reader of a file held in memory (bytes or any buffer). The bytes are copied
        once, 64-byte aligned, and raw tensors are views of that copy."""
        r = cls.__new__(cls)
        r._h = Handle.open_memory(data, **limits)
        return r

    def _handle(self):
        h = self._h
        if h is None:
            raise ValueError("the reader is closed")
        return h

    # --- the file ----------------------------------------------------------------------
    @property
    def format(self):
        """The file's format as the reference package names it: "zt", "safetensors",
        "gguf", "tensogram", "pickle" (a PyTorch checkpoint), "npz" or "npy" (NumPy),
        "onnx"."""
        h = self._handle()
        fmt = h.format
        if fmt == "pytorch":
            return "pickle"
        if fmt == "numpy":
            return "npz" if h.version == "npz" else "npy"
        return fmt

    @property
    def version(self):
        """The format's version: "1.2.0" for zTensor 1.2, "3" for GGUF v3 ..."""
        return self._handle().version

    @property
    def path(self):
        return self._handle().path

    @property
    def shards(self):
        """The path of every file the reader reads (one for a single file)."""
        return self._handle().shard_paths()

    @property
    def attributes(self):
        """The file's attributes as Python values: GGUF key/values (typed: ints, floats,
        strings, NumPy arrays for numeric arrays, lists of str for the vocabulary),
        safetensors' __metadata__, zTensor and Tensogram attributes."""
        return self._handle().attributes()

    def object_attributes(self, name):
        h = self._handle()
        return h.attributes(h.index_of(name))

    @property
    def attributes_json(self):
        return self._handle().attributes_json()

    @property
    def remote_stats(self):
        """(requests, bytes) the reader has moved, for a URL; ValueError otherwise."""
        return self._handle().remote_stats()

    def verify(self):
        """Checks every digest (and decodes every encoded component); raises
        ChecksumError (a ValueError) on a mismatch."""
        self._handle().verify()

    def validate(self, name):
        """Checks an object's values beyond the manifest (sparse structure, bool bytes)."""
        h = self._handle()
        h.validate(h.index_of(name))

    # --- a mapping of names ------------------------------------------------------------
    def keys(self):
        """Every tensor name, in file order."""
        return list(self._handle().names())

    def __len__(self):
        return self._handle().count()

    def __contains__(self, name):
        return self._handle().contains(name)

    def __iter__(self):
        return iter(self.keys())

    def __getitem__(self, name):
        h = self._handle()
        return h.value(h.index_of(name))

    def get(self, name, default=None):
        h = self._handle()
        if not h.contains(name):
            return default
        return h.value(h.index_of(name))

    def values(self):
        h = self._handle()
        return [h.value(i) for i in range(h.count())]

    def items(self):
        h = self._handle()
        return list(zip(h.names(), (h.value(i) for i in range(h.count()))))

    # --- metadata ----------------------------------------------------------------------
    def metadata(self, name):
        """TensorMetadata of one tensor (a str) or of several (a list)."""
        if isinstance(name, list):
            return [self._metadata(n) for n in name]
        if isinstance(name, str):
            return self._metadata(name)
        raise TypeError("name must be a str or a list of str")

    def _metadata(self, name):
        h = self._handle()
        obj = h.object(h.index_of(name))
        primary = obj.primary
        return TensorMetadata(
            obj.name,
            _dtypes.LONG_NAMES[primary.dtype] if primary is not None else "unknown",
            list(obj.shape),
            obj.format,
            type=primary.type if primary is not None else None,
            components={c.role: c.as_dict() for c in obj.components},
            attributes=h.attributes(obj.index) or None,
        )

    # --- reading -------------------------------------------------------------------------
    def read_numpy(self, name, *, copy=False):
        """One tensor (a str) as an array, or several (a list) as {name: array}.
        copy=False: read-only views of the file's memory where the data is raw; copy=True:
        arrays of their own (writable), read in one parallel batch."""
        h = self._handle()
        if isinstance(name, str):
            return h.value(h.index_of(name), copy)
        if isinstance(name, (list, tuple)):
            return h.load_dense(list(name), copy)
        raise TypeError("name must be a str or a list of str")

    def read_tensors(self, names, *, copy=False):
        """{name: array} of several tensors (see read_numpy)."""
        return self.read_numpy(list(names), copy=copy)

    def read_torch(self, name, *, copy=False, device="cpu"):
        """One tensor (a str) or several (a list) as torch tensors: raw data of a mapped
        file shares the file's pages copy-on-write (as safetensors does), anything else
        is decoded into tensors of its own; then moved to `device`."""
        from . import _torch

        h = self._handle()
        if isinstance(name, str):
            return _torch.load(h, [name], device, copy)[name]
        return _torch.load(h, list(name), device, copy)

    def load_numpy(self, *, copy=False):
        """{name: array} of every tensor, in file order (the 1.2.1 package's name for
        read_numpy of every name): views of the file's copy-on-write mapping where the
        data is raw, arrays of their own with copy=True."""
        return self._handle().load_dense(None, copy)

    def load_torch(self, *, device="cpu", copy=False):
        """{name: torch tensor} of every tensor, in file order, on `device` (the 1.2.1
        package's name for read_torch of every name)."""
        from . import _torch

        return _torch.load(self._handle(), None, device, copy)

    def read(self, name, dtype=None):
        """A tensor's values in a new array, converted to `dtype` when given (a NumPy dtype
        the library converts to: float32, float64, float16, ml_dtypes.bfloat16, integers;
        GGUF block-quantized tensors dequantize to float32, float16 and bfloat16)."""
        h = self._handle()
        index = h.index_of(name)
        if dtype is None:
            return h.value(index, copy=True)
        obj = h.object(index)
        component = obj.component("data") if obj.format == "dense" or obj.format.startswith("ggml_") \
            else obj.primary
        np_dtype = np.dtype(dtype)
        code, logical = _dtypes.from_numpy(np_dtype)
        if logical is not None:
            raise ValueError(f"can't convert to {np_dtype}: only to storage dtypes")
        return h.read_as(index, component, code, obj.shape, np_dtype)

    def read_into(self, name, dst=None):
        """Reads a tensor's values into `dst`, decoding on the way, no other copy: a
        C-contiguous NumPy array (or any writable buffer) of exactly its size in bytes,
        or a torch tensor (contiguous on the CPU: straight into it; elsewhere through a
        CPU copy). `name` may be {name: dst} to read several (in file order, one
        parallel batch where every destination is a CPU buffer)."""
        h = self._handle()
        if isinstance(name, dict):
            pending = []
            for n in sorted(name, key=h.index_of):
                target = name[n]
                index = h.index_of(n)
                buffer = _cpu_buffer(target)
                if buffer is None:
                    self.read_into(n, target)
                else:
                    pending.append((index, buffer))
            if pending:
                h.batch_read(pending)
            return
        if dst is None:
            raise TypeError("read_into(name, dst): dst is needed for one tensor (or pass {name: dst})")
        obj = h.object(h.index_of(name))
        component = obj.component("data") if obj.format == "dense" else obj.primary
        buffer = _cpu_buffer(dst)
        if buffer is not None:  # the library refuses a size that isn't the tensor's
            h.read_into(obj.index, component, buffer)
            return
        # a torch tensor elsewhere (or not contiguous): read on the CPU, then copy
        from . import _torch

        staged = h.component_array(obj.index, component, obj.shape, copy=True)
        dst.copy_(_torch.from_numpy(staged).reshape(dst.shape))

    def tensor(self, name, role=None):
        """A Tensor (DLPack-exportable, zero-copy) of one component: `data` of a dense
        object by default, else the role named (`values`, `indices` ...)."""
        h = self._handle()
        obj = h.object(h.index_of(name))
        if role is None:
            if len(obj.components) != 1:
                raise ValueError(f"'{name}' is {obj.format} with components "
                                 f"{', '.join(c.role for c in obj.components)}: name one")
            component = obj.components[0]
        else:
            component = obj.component(role)
        return Tensor(h, obj, component)

    # --- lifetime ------------------------------------------------------------------------
    def close(self):
        """Releases the reader. Arrays and tensors made from it stay valid: the file is
        closed (and unmapped) when the last of them is gone."""
        self._h = None

    @property
    def closed(self):
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        h = self._h
        if h is None:
            return "<ztensor_c.Reader (closed)>"
        return f"<ztensor_c.Reader [{h.format}, {h.count()} tensor(s)]>"


def open(path, **options):
    """Opens a tensor file for reading (see Reader)."""
    return Reader(path, **options)


def _cpu_buffer(dst):
    """A writable buffer over `dst`'s memory when it is a C-contiguous NumPy array (or
    another buffer) or a contiguous CPU torch tensor; None for other torch tensors."""
    if type(dst).__module__.startswith("torch"):
        if dst.device.type != "cpu" or not dst.is_contiguous():
            return None
        import numpy as np

        from ._lib import ffi

        n = dst.numel() * dst.element_size()
        if n == 0:
            return np.empty(0, np.uint8)
        return np.frombuffer(ffi.buffer(ffi.cast("char *", dst.data_ptr()), n), np.uint8)
    return dst

