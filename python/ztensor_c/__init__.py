"""ztensor_c: tensor files from Python through the ztensor C library.

Reads zTensor (.zt, v1.2, v1.1 and legacy v0.1), safetensors, GGUF and Tensogram files,
sets of them (`*.index.json`, GGUF splits) and URLs (s3://, gs://, az://, http(s)://);
writes zTensor. Three APIs:

- safetensors': `ztensor_c.numpy` / `ztensor_c.torch` (load_file, save_file, load, save;
  load_model, save_model) and `ztensor_c.safe_open(path, framework="np"|"pt")`
- the reference ztensor package's: `ztensor_c.Reader(path)` (a mapping of names to
  arrays, metadata, read_tensors ...), `ztensor_c.Writer(path)`, `ztensor_c.open(path)`
- zero-copy tensors: `reader.tensor(name)` supports DLPack (`np.from_dlpack`,
  `torch.from_dlpack`)

The import name is ztensor_c (distribution ztensor-c) so it never shadows the reference
`ztensor` package: both can be installed side by side.
"""

from . import _lib
from . import numpy  # noqa: F401  (ztensor_c.numpy after `import ztensor_c`; torch is imported on demand)
from ._lib import (
    BufferTooSmallError,
    CanceledError,
    ChecksumError,
    FormatError,
    InternalError,
    InvalidArgumentError,
    LimitError,
    NotFoundError,
    SafetensorError,
    StateError,
    UnsupportedError,
    ZtError,
    ZtOSError,
)
from ._reader import Reader, TensorMetadata, open
from ._safe_open import safe_open
from ._serialize import TensorSpec, deserialize, serialize, serialize_file
from ._tensor import Tensor
from ._values import OtherValue
from ._writer import Writer

__version__ = _lib.ffi.string(_lib.lib.zt_version()).decode()
library_version = __version__

__all__ = [
    "Reader", "Writer", "open", "safe_open", "Tensor", "TensorMetadata", "OtherValue",
    "SafetensorError", "ZtError", "ZtOSError", "FormatError", "UnsupportedError", "NotFoundError",
    "ChecksumError", "LimitError", "InvalidArgumentError", "BufferTooSmallError",
    "StateError", "InternalError", "CanceledError", "__version__",
    "TensorSpec", "serialize", "serialize_file", "deserialize",
]
