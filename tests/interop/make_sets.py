#!/usr/bin/env python3
"""Writes sharded sets with the formats' own Python packages (pinned in
formats-requirements.txt), and what each must read as, built from the arrays handed to
the writers (never by reading the files back).

Usage: make_sets.py OUTDIR
Writes
  OUTDIR/safetensors/model-0000k-of-00003.safetensors  safetensors.numpy.save_file, one
                                                        call per shard
  OUTDIR/safetensors/model.safetensors.index.json      as transformers writes it
                                                        (json.dumps(indent=2,
                                                        sort_keys=True) + newline)
  OUTDIR/gguf/split-0000k-of-00003.gguf                GGUFWriter(split_max_tensors=2)
  OUTDIR/sets.json   {"<set>": {"open": file to open, "attributes": {...},
                      "shards": [file, ...],
                      "objects": [{"name", "shard", "dtype", "shape", "hex"}]}}
"hex" is the exact bytes of the tensor; "shard" its file's index in "shards".
The output is the same on every run (tests/shards.rs checks the committed copies in
tests/vectors/sets/ are current).
"""

import json
import os
import sys

import numpy as np
from gguf import GGUFWriter
from safetensors.numpy import save_file


def values(dtype, shape, seed):
    n = int(np.prod(shape))
    return ((np.arange(n) * 7 + seed * 13) % 101 - 50).astype(dtype).reshape(shape)


def main(out):
    doc = {}

    # safetensors: three shards, the third holding one tensor.
    st = os.path.join(out, "safetensors")
    os.makedirs(st, exist_ok=True)
    shards = [
        {"model.embed_tokens.weight": values(np.float32, (4, 3), 1),
         "model.layers.0.attn.weight": values(np.float16, (2, 2), 2)},
        {"model.layers.0.attn.bias": values(np.float32, (3,), 3),
         "model.layers.1.attn.weight": values(np.int32, (2, 3), 4)},
        {"lm_head.weight": values(np.float64, (2, 2), 5)},
    ]
    names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    weight_map, objects, total = {}, [], 0
    for i, (name, tensors) in enumerate(zip(names, shards)):
        save_file(tensors, os.path.join(st, name), metadata={"format": "pt"})
        for t, a in tensors.items():
            weight_map[t] = name
            total += a.nbytes
            objects.append({"name": t, "shard": i, "dtype": str(a.dtype),
                            "shape": list(a.shape), "hex": a.tobytes().hex()})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(st, "model.safetensors.index.json"), "w") as fh:
        fh.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    doc["safetensors"] = {"open": "model.safetensors.index.json",
                          "attributes": index["metadata"], "shards": names,
                          "objects": objects}

    # GGUF: five tensors, two per split ("tok.weight" and "out.weight" are as long, so a
    # test can rename one into the other).
    gg = os.path.join(out, "gguf")
    os.makedirs(gg, exist_ok=True)
    w = GGUFWriter(os.path.join(gg, "split.gguf"), "llama", split_max_tensors=2)
    w.add_name("sets")
    w.add_uint32("test.answer", 42)
    tensors = [
        ("tok.weight", values(np.float32, (4, 3), 6)),
        ("blk.0.attn_q.weight", values(np.float16, (2, 2), 7)),
        ("blk.0.attn_norm.weight", values(np.float32, (3,), 8)),
        ("blk.1.ffn.weight", values(np.int32, (2, 3), 9)),
        ("out.weight", values(np.float32, (5,), 10)),
    ]
    objects = []
    for i, (name, a) in enumerate(tensors):
        w.add_tensor(name, a)
        # GGUF shapes are stored innermost first; the reader gives them outermost first.
        objects.append({"name": name, "shard": i // 2, "dtype": str(a.dtype),
                        "shape": list(a.shape), "hex": a.tobytes().hex()})
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    names = [f"split-{i + 1:05d}-of-00003.gguf" for i in range(3)]
    doc["gguf"] = {"open": names[1],
                   "attributes": {"general.architecture": "llama", "general.name": "sets",
                                  "test.answer": 42, "split.no": 0, "split.count": 3,
                                  "split.tensors.count": 5},
                   "shards": names, "objects": objects}

    with open(os.path.join(out, "sets.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
