"""The reference `ztensor` package's 1.x API, for code written for it:

    import ztensor_c.v1 as ztensor

    with ztensor.Writer("model.zt") as w:
        w.write_numpy("weight", array)
    reader = ztensor.Reader("model.zt")
    tensors = reader.read_numpy(reader.keys())

Reader and Writer are ztensor_c's own (every format the library reads; zTensor written).
`ztensor_c.v1.numpy` and `ztensor_c.v1.torch` are the 1.x package's modules of the same
names: their save_file writes zTensor (with `compression=`), where `ztensor_c.numpy` and
`ztensor_c.torch` stand in for safetensors' and write safetensors.
"""

from .._lib import ZtError as ZTensorError
from .._reader import Reader, TensorMetadata, open
from .._writer import Writer
from ._tensor import Tensor

__all__ = ["Reader", "Writer", "Tensor", "TensorMetadata", "ZTensorError", "open"]
