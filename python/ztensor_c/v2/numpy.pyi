from typing import Any

import numpy.typing as npt

from .. import PathLike

def save_file(tensors: dict[str, npt.NDArray[Any]], filename: PathLike, metadata: dict[str, Any] | None = ...) -> None: ...
def load_file(filename: PathLike) -> dict[str, npt.NDArray[Any]]: ...
