"""Writes small PyTorch checkpoints with torch.save itself, and what ztensor must read
from each (expected.json), for tests/torch_checkpoints.rs.

    python make_torch_fixtures.py OUT_DIR

torch is not installed where the tests run (PyPI's torch pulls gigabytes of CUDA
libraries), so the files are committed under tests/vectors/torch/ with expected.json, and
the tests check them without torch. Made with torch==2.15.0 (CPU is enough):
    python -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch==2.15.0 numpy
    /tmp/torchvenv/bin/python tests/interop/make_torch_fixtures.py tests/vectors/torch

expected.json maps each file name to {"format", "version", "objects": [...],
"attributes"} or {"error": status}. An object is {"name", "shape", "dtype", "type",
"nbytes", "sha256"}: sha256 of the tensor's bytes, row-major (`.contiguous()`), as torch
holds them (little-endian).
"""

import collections
import hashlib
import json
import os
import sys

import torch

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(29)

# torch dtype -> (ztensor storage dtype, logical type)
DTYPES = {
    torch.float64: ("f64", None),
    torch.float32: ("f32", None),
    torch.float16: ("f16", None),
    torch.bfloat16: ("bf16", None),
    torch.int64: ("i64", None),
    torch.int32: ("i32", None),
    torch.int16: ("i16", None),
    torch.int8: ("i8", None),
    torch.uint8: ("u8", None),
    torch.uint16: ("u16", None),
    torch.uint32: ("u32", None),
    torch.uint64: ("u64", None),
    torch.bool: ("bool", None),
    torch.complex32: ("f16", "complex32"),
    torch.complex64: ("f32", "complex64"),
    torch.complex128: ("f64", "complex128"),
    torch.float8_e4m3fn: ("u8", "f8_e4m3fn"),
    torch.float8_e5m2: ("u8", "f8_e5m2"),
    torch.float8_e4m3fnuz: ("u8", "f8_e4m3fnuz"),
    torch.float8_e5m2fnuz: ("u8", "f8_e5m2fnuz"),
    torch.float8_e8m0fnu: ("u8", "f8_e8m0fnu"),
    torch.float4_e2m1fn_x2: ("u8", "f4_e2m1fn_x2"),
}


def raw(t):
    """The tensor's bytes, row-major."""
    t = t.detach().contiguous()
    if t.dim() == 0:
        t = t.reshape(1)
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def obj(name, t):
    dtype, logical = DTYPES[t.dtype]
    shape = list(t.shape)
    if t.dtype == torch.float4_e2m1fn_x2:
        shape = shape[:-1] + [shape[-1] * 2] if shape else [2]
    data = raw(t) if t.numel() else b""
    return {"name": name, "shape": shape, "dtype": dtype, "type": logical,
            "nbytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def sample(dtype, shape=(2, 3)):
    n = 1
    for d in shape:
        n *= d
    bits = torch.randint(0, 256, (n * torch.empty((), dtype=dtype).element_size(),),
                         dtype=torch.uint8)
    if dtype.is_floating_point or dtype.is_complex:
        # Finite values: float bits from a float32 draw, converted.
        base = torch.randn(n) * 4
        if dtype.is_complex:
            return torch.complex(base, torch.randn(n)).to(dtype).reshape(shape)
        if dtype == torch.float8_e8m0fnu:
            return (2.0 ** torch.randint(-4, 4, (n,)).float()).to(dtype).reshape(shape)
        if dtype == torch.float4_e2m1fn_x2:
            return bits[:n].view(dtype).reshape(shape)
        return base.to(dtype).reshape(shape)
    if dtype == torch.bool:
        return (torch.rand(n) > 0.5).reshape(shape)
    return bits.view(dtype).reshape(shape)


expected = {}


def save(fname, obj_, objects, attributes=None, **kw):
    torch.save(obj_, os.path.join(OUT, fname), **kw)
    expected[fname] = {"format": "pytorch", "version": "3", "objects": objects,
                       "attributes": attributes}


# Every dtype, one tensor each.
d = {str(dt).removeprefix("torch."): sample(dt) for dt in DTYPES}
save("dtypes.pt", d, [obj(k, v) for k, v in d.items()])

# Views into shared storages: offsets, transposes, steps, stride 0, tied weights, partial
# overlaps, scalars and empty tensors.
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
flat = torch.arange(20, dtype=torch.int16)
views = collections.OrderedDict([
    ("base", base),
    ("row", base[1]),
    ("rows", base[1:3]),
    ("col", base[:, 2]),
    ("t", base.t()),
    ("tied", base),
    ("step", base[:, ::2]),
    ("overlap_a", flat[0:10]),
    ("overlap_b", flat[5:15]),
    ("overlap_t", flat[2:14].reshape(3, 4).t()),
    ("expand", torch.tensor([1, 2, 3], dtype=torch.int64).expand(2, 3)),
    ("scalar", torch.tensor(2.5, dtype=torch.float64)),
    ("empty", torch.zeros(0, 3)),
])
save("views.pt", views, [obj(k, v) for k, v in views.items()])

# Nested dicts and lists, with plain values beside the tensors.
w1, w2, w3 = sample(torch.float32, (2, 2)), sample(torch.float16, (3,)), sample(torch.int64, (2,))
nested = {
    "model": {"encoder": {"weight": w1}, "layers": [w2, {"bias": w3}]},
    "epoch": 5,
    "lr": 0.001,
    "name": "run-29",
    "flags": [True, None, -3],
    "optimizer": {"state": {}, "param_groups": [{"lr": 0.1, "params": [0, 1]}]},
}
save("nested.pt", nested,
     [obj("model.encoder.weight", w1), obj("model.layers.0", w2), obj("model.layers.1.bias", w3)],
     {"epoch": 5, "lr": 0.001, "name": "run-29", "flags": [True, None, -3],
      "optimizer.state": {}, "optimizer.param_groups.0.lr": 0.1,
      "optimizer.param_groups.0.params": [0, 1]})

# A module's state_dict (an OrderedDict with _metadata) and parameters.
lin = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
sd = lin.state_dict()
save("state_dict.bin", sd, [obj(k, v) for k, v in sd.items()])
params = {"p": torch.nn.Parameter(sample(torch.float32, (2, 2))),
          "frozen": torch.nn.Parameter(sample(torch.bfloat16, (3,)), requires_grad=False)}
save("parameters.pt", params, [obj(k, v) for k, v in params.items()])

# A bare tensor.
bare = sample(torch.int32, (5,))
save("bare_tensor.pt", bare, [obj("tensor", bare)])

# A sharded checkpoint as transformers writes it, with its index.
shards = [{"a.weight": sample(torch.float32, (2, 3)), "a.bias": sample(torch.float32, (3,))},
          {"b.weight": sample(torch.bfloat16, (4, 2))}]
weight_map = {}
set_objects = []
for i, shard in enumerate(shards):
    fname = f"pytorch_model-{i + 1:05d}-of-{len(shards):05d}.bin"
    torch.save(shard, os.path.join(OUT, fname))
    for k, v in shard.items():
        weight_map[k] = fname
        set_objects.append(obj(k, v))
with open(os.path.join(OUT, "pytorch_model.bin.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": sum(v.numel() * v.element_size()
                                              for s in shards for v in s.values())},
               "weight_map": weight_map}, f, indent=2)
expected["pytorch_model.bin.index.json"] = {
    "format": "pytorch", "version": "3", "objects": set_objects,
    "attributes": {"total_size": sum(v.numel() * v.element_size()
                                     for s in shards for v in s.values())}}
for i in range(len(shards)):
    fname = f"pytorch_model-{i + 1:05d}-of-{len(shards):05d}.bin"
    expected[fname] = {"format": "pytorch", "version": "3",
                       "objects": [obj(k, v) for k, v in shards[i].items()], "attributes": None}

# The legacy format (before torch 1.6): refused.
torch.save({"w": torch.zeros(2)}, os.path.join(OUT, "legacy.pt"),
           _use_new_zipfile_serialization=False)
expected["legacy.pt"] = {"error": "ZT_ERR_UNSUPPORTED"}

# A whole module pickled (its class is a global a state dict doesn't need): refused.
torch.save(torch.nn.Linear(2, 2), os.path.join(OUT, "module.pt"))
expected["module.pt"] = {"error": "ZT_ERR_UNSUPPORTED"}

with open(os.path.join(OUT, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")
