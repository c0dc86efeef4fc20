#!/usr/bin/env python3
"""Writes a tiny llama-style GGUF model with gguf-py (pinned in dequant-requirements.txt),
what c_examples/gguf_loader.c loads through the typed attribute API.

Usage: make_loader_vector.py OUTDIR
Writes to OUTDIR:
  llama_tiny.gguf  key/values: general.architecture "llama", general.name "tiny",
                   llama.block_count (u32 2), llama.context_length (u32 256),
                   llama.embedding_length (u32 64), llama.attention.head_count (u32 4),
                   llama.attention.layer_norm_rms_epsilon (f32 1e-5),
                   llama.rope.freq_base (f32 10000), tokenizer.ggml.model "llama",
                   tokenizer.ggml.tokens (100 strings "<unk>", "<s>", "</s>", "tok3" ...),
                   tokenizer.ggml.scores (100 f32: -i), tokenizer.ggml.token_type
                   (100 i32), tokenizer.ggml.bos_token_id (u32 1), general.file_type (u32 2);
                   tensors token_embd.weight Q4_0 [100, 64], blk.0.attn_q.weight Q8_0
                   [64, 64], blk.0.ffn_down.weight Q4_K [4, 256], output_norm.weight F32
                   [64], blk.0.attn_norm.weight F16 [64]
  llama_tiny.f32   gguf.quants.dequantize of the Q4_0, Q8_0 and Q4_K tensors, in that
                   order, f32 little-endian
The output is the same on every run (seeded); tests/interop_dequant.rs checks the
committed copy in tests/vectors/gguf/ is current.
"""

import os
import sys

import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType, TokenType
from gguf.quants import dequantize, quantize

T = GGMLQuantizationType
VOCAB = 100


def q4_k_blocks(rng, rows):
    """Q4_K blocks (144 bytes: f16 d, f16 dmin, 12 scale bytes, 128 quant bytes) with
    small finite d and dmin and random scales and quants."""
    b = rng.integers(0, 256, size=(rows, 144), dtype=np.uint8)
    d = rng.uniform(0.001, 0.01, size=(rows, 2)).astype("<f2")
    b[:, 0:4] = d.view(np.uint8).reshape(rows, 4)
    return b


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_loader_vector.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20251127)
    w = GGUFWriter(os.path.join(out, "llama_tiny.gguf"), "llama")
    w.add_name("tiny")
    w.add_block_count(2)
    w.add_context_length(256)
    w.add_embedding_length(64)
    w.add_head_count(4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_file_type(2)
    w.add_tokenizer_model("llama")
    tokens = ["<unk>", "<s>", "</s>"] + ["tok%d" % i for i in range(3, VOCAB)]
    w.add_token_list(tokens)
    w.add_token_scores([-float(i) for i in range(VOCAB)])
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.NORMAL] * (VOCAB - 3)
    w.add_token_types(types)
    w.add_bos_token_id(1)

    values = []
    x = rng.standard_normal((VOCAB, 64)).astype(np.float32)
    q = quantize(x, T.Q4_0)
    w.add_tensor("token_embd.weight", q, raw_dtype=T.Q4_0)
    values.append(dequantize(q, T.Q4_0).reshape(-1))
    x = rng.standard_normal((64, 64)).astype(np.float32)
    q = quantize(x, T.Q8_0)
    w.add_tensor("blk.0.attn_q.weight", q, raw_dtype=T.Q8_0)
    values.append(dequantize(q, T.Q8_0).reshape(-1))
    q = q4_k_blocks(rng, 4)
    w.add_tensor("blk.0.ffn_down.weight", q, raw_dtype=T.Q4_K)
    values.append(dequantize(q, T.Q4_K).reshape(-1))
    w.add_tensor("output_norm.weight", rng.standard_normal(64).astype(np.float32))
    w.add_tensor("blk.0.attn_norm.weight", rng.standard_normal(64).astype(np.float16))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    allv = np.concatenate(values)
    assert np.isfinite(allv).all()
    with open(os.path.join(out, "llama_tiny.f32"), "wb") as fh:
        fh.write(allv.astype("<f4").tobytes())
    print("%d values written to %s" % (allv.size, out))


if __name__ == "__main__":
    main()
