"""The Reader and Writer: write a zTensor file, read its metadata, arrays and a
zero-copy tensor (DLPack)."""

import sys
import tempfile
from pathlib import Path

import numpy as np

import ztensor_c


def main(directory: Path) -> None:
    path = directory / "model.zt"
    with ztensor_c.Writer(path) as w:
        w.add("weight", np.ones((2, 3), np.float32), compress=True, checksum="sha256")
        w.add("ids", np.arange(10, dtype=np.int64))
        w.set_attributes({"model": "demo", "layers": 2})
    with ztensor_c.Reader(path) as r:
        meta = r.metadata("weight")
        print(r.format, r.version, len(r), meta.shape, meta.dtype, r.attributes)
        ids = r.read_numpy("ids")
        both = r.read_tensors(["weight", "ids"], copy=True)
        t = r.tensor("ids")
        view = np.from_dlpack(t)
        assert view.ctypes.data == ids.ctypes.data and t.zero_copy
        dst = np.empty((2, 3), np.float32)
        r.read_into("weight", dst)
        print(sorted(both), float(dst.sum()))
    try:
        ztensor_c.Reader(directory / "missing.zt")
    except FileNotFoundError as e:
        print("missing:", e.errno)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
