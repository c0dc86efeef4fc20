from typing import Any

import numpy.typing as npt

from .. import Reader as Reader, TensorMetadata as TensorMetadata, Writer as Writer
from .. import ZtError as ZTensorError, open as open
from . import numpy as numpy

class Tensor:
    shape: list[int]
    dtype: str
    type: str | None
    format: str
    components: dict[str, npt.NDArray[Any]]
    attributes: dict[str, Any] | None
    def __init__(self, components: dict[str, npt.NDArray[Any]], *, shape: list[int] | None = ...,
                 dtype: Any = ..., format: str = ..., type: str | None = ...,
                 attributes: dict[str, Any] | None = ...) -> None: ...
    def numpy(self) -> npt.NDArray[Any]: ...
    def torch(self, *, device: str = ...) -> Any: ...
