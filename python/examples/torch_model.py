"""safetensors.torch's API: save a module (tied weights once), load it back, load a
file's tensors and write into one (copy-on-write: the file never changes)."""

import sys
import tempfile
from pathlib import Path

import torch

import ztensor_c.torch


def main(directory: Path) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    path = directory / "model.safetensors"
    ztensor_c.torch.save_model(model, path)
    missing, unexpected = ztensor_c.torch.load_model(model, path)
    tensors = ztensor_c.torch.load_file(path)
    w = tensors["0.weight"]
    w += 1  # this process's pages only
    print(sorted(tensors), missing, unexpected, ztensor_c.torch.storage_ptr(w) != 0)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
