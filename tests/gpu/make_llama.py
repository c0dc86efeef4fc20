#!/usr/bin/env python3
"""Writes a Llama-like bf16 safetensors file: the shapes of a Llama-3-8B (hidden 4096,
intermediate 14336, 8 KV heads of 128, vocabulary 128256) with 15 layers, 8.05 GiB, the
size of issue 27's file. Values are bf16 of N(0, 0.02), as trained weights roughly are
(so zstd finds what it finds in real weights: the sign and exponent bits, not the mantissa).

    python3 make_llama.py OUT.safetensors            # the 8 GiB file (numpy, all cores)
    python3 make_llama.py --quick OUT.safetensors    # ~1 MB, same names (numpy optional)

Only the standard library is needed for --quick (the ctest on machines without numpy).
"""

import json
import os
import random
import struct
import sys
from concurrent.futures import ThreadPoolExecutor

FULL = dict(hidden=4096, inter=14336, kv=1024, vocab=128256, layers=15)
QUICK = dict(hidden=128, inter=352, kv=32, vocab=512, layers=2)


def tensors(p):
    """(name, shape) in the order Hugging Face writes them."""
    h, i, kv = p["hidden"], p["inter"], p["kv"]
    out = [("model.embed_tokens.weight", [p["vocab"], h])]
    for n in range(p["layers"]):
        pre = f"model.layers.{n}."
        out += [
            (pre + "input_layernorm.weight", [h]),
            (pre + "self_attn.q_proj.weight", [h, h]),
            (pre + "self_attn.k_proj.weight", [kv, h]),
            (pre + "self_attn.v_proj.weight", [kv, h]),
            (pre + "self_attn.o_proj.weight", [h, h]),
            (pre + "post_attention_layernorm.weight", [h]),
            (pre + "mlp.gate_proj.weight", [i, h]),
            (pre + "mlp.up_proj.weight", [i, h]),
            (pre + "mlp.down_proj.weight", [h, i]),
        ]
    out += [("model.norm.weight", [h]), ("lm_head.weight", [p["vocab"], h])]
    return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def bf16_chunks_numpy(count, seed):
    """bf16 bytes of `count` N(0, 0.02) values, generated in parallel chunks."""
    import numpy as np

    step = 1 << 25

    def chunk(k):
        n = min(step, count - k * step)
        rng = np.random.default_rng(seed * 1_000_003 + k)
        v = rng.standard_normal(n, dtype=np.float32) * np.float32(0.02)
        return (v.view(np.uint32) >> 16).astype("<u2").tobytes()

    parts = (count + step - 1) // step
    with ThreadPoolExecutor(os.cpu_count() or 4) as pool:
        yield from pool.map(chunk, range(parts))


def bf16_chunks_python(count, seed):
    rng = random.Random(seed)
    out = bytearray()
    for _ in range(count):
        bits = struct.unpack("<I", struct.pack("<f", rng.gauss(0.0, 0.02)))[0] >> 16
        out += struct.pack("<H", bits)
    yield bytes(out)


def write(path, p, use_numpy):
    layout = tensors(p)
    header, at = {}, 0
    for name, shape in layout:
        size = numel(shape) * 2
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [at, at + size]}
        at += size
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for k, (name, shape) in enumerate(layout):
            gen = bf16_chunks_numpy if use_numpy else bf16_chunks_python
            for part in gen(numel(shape), k + 1):
                f.write(part)
    os.replace(tmp, path)
    return at


def main(argv):
    quick = "--quick" in argv
    args = [a for a in argv if a != "--quick"]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import numpy  # noqa: F401

        use_numpy = True
    except ImportError:
        if not quick:
            print("make_llama.py: the 8 GiB file needs numpy", file=sys.stderr)
            return 2
        use_numpy = False
    size = write(args[0], QUICK if quick else FULL, use_numpy)
    count = len(tensors(QUICK if quick else FULL))
    print(f"wrote {args[0]}: {count} bf16 tensors, {size} bytes ({size / 2**30:.2f} GiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
