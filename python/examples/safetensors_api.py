"""safetensors' API: save a dict of arrays, load it back, open it lazily and slice it."""

import sys
import tempfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

import ztensor_c
import ztensor_c.numpy


def main(directory: Path) -> None:
    tensors: dict[str, npt.NDArray[np.float32]] = {
        "embed": np.arange(32, dtype=np.float32).reshape(8, 4),
        "norm": np.ones(4, dtype=np.float32),
    }
    path = directory / "model.safetensors"
    ztensor_c.numpy.save_file(tensors, path, metadata={"step": "3"})
    loaded = ztensor_c.numpy.load_file(path)
    assert all(np.array_equal(loaded[k], v) for k, v in tensors.items())
    with ztensor_c.safe_open(path, framework="np") as f:
        metadata = f.metadata()
        rows = f.get_slice("embed")[2:4]
        print(f.keys(), metadata, rows.shape)
    data: bytes = ztensor_c.numpy.save(tensors)
    print(len(ztensor_c.numpy.load(data)), "tensors from", len(data), "bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
