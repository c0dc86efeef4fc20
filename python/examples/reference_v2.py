"""The reference package's 2.x API: write canonical zTensor v2, open it as a mapping of
handles, convert a safetensors file, verify."""

import sys
import tempfile
from pathlib import Path

import numpy as np

import ztensor_c.numpy
import ztensor_c.v2 as ztensor


def main(directory: Path) -> None:
    path = directory / "v2.zt"
    with ztensor.Writer(path) as w:
        w.add("a.weight", np.arange(6, dtype=np.float32).tobytes(), shape=[2, 3], dtype="f32")
        w.set_attributes({"producer": "example"})
    with ztensor.open(path) as src:
        for name in src:
            t = src[name]
            print(t.name, t.shape, t.dtype, t.caps.map, t.location.offset)
        arr = np.from_dlpack(src["a.weight"])
        print(arr.sum(), src.attributes)
    st = directory / "m.safetensors"
    ztensor_c.numpy.save_file({"w": np.zeros((2, 2), np.float32)}, st)
    ztensor.convert(st, directory / "m.zt")
    checked, undigested = ztensor.verify(directory / "m.zt")
    print(ztensor.detect(st), checked, undigested)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
