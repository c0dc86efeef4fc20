"""transformers loads and saves a model through ztensor_c standing in for safetensors
(issue 38 item 2): `sys.modules["safetensors"] = ztensor_c` and
`sys.modules["safetensors.torch"] = ztensor_c.torch` before transformers is imported,
then `from_pretrained` of a small random sharded Llama that safetensors wrote, and
`save_pretrained` of it and `from_pretrained` of that, unchanged. The logits of each
load are bit-equal to those of a plain load (transformers with safetensors itself).

The model is made in the test (a tiny LlamaForCausalLM with tied embeddings, so
save_pretrained finds the shared tensor through storage_ptr), from a fixed seed; each
step runs in a fresh interpreter, so that the stand-in modules are the only safetensors
transformers ever sees there.
"""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is not installed: the transformers drop-in test needs it")
pytest.importorskip("transformers", reason="transformers is not installed: the drop-in test needs it")

import ztensor_c  # noqa: E402

PRELUDE = textwrap.dedent("""
    import sys
    if sys.argv[1] == "ours":
        import ztensor_c, ztensor_c.torch
        sys.modules["safetensors"] = ztensor_c
        sys.modules["safetensors.torch"] = ztensor_c.torch
    import numpy as np
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    import transformers.modeling_utils, transformers.pytorch_utils
    if sys.argv[1] == "ours":  # the stand-ins are what transformers uses
        assert transformers.modeling_utils.safe_open is ztensor_c.safe_open
        assert transformers.pytorch_utils.storage_ptr is ztensor_c.torch.storage_ptr
    else:
        import safetensors
        assert transformers.modeling_utils.safe_open is safetensors.safe_open
    torch.manual_seed(0)
    IDS = torch.tensor([[1, 5, 9, 2, 7, 3, 11, 4]])

    def logits(directory):
        model = LlamaForCausalLM.from_pretrained(directory, dtype=torch.float32)
        model.eval()
        with torch.no_grad():
            return model(IDS).logits.numpy()
""")

MAKE = PRELUDE + textwrap.dedent("""
    config = LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         tie_word_embeddings=True)
    model = LlamaForCausalLM(config)
    model.save_pretrained(sys.argv[2], max_shard_size="20KB")
    np.save(sys.argv[3], logits(sys.argv[2]))
""")

LOAD = PRELUDE + textwrap.dedent("""
    np.save(sys.argv[3], logits(sys.argv[2]))
""")

ROUND_TRIP = PRELUDE + textwrap.dedent("""
    model = LlamaForCausalLM.from_pretrained(sys.argv[2], dtype=torch.float32)
    model.save_pretrained(sys.argv[4], max_shard_size="20KB")
    np.save(sys.argv[3], logits(sys.argv[4]))
""")


def run(script, *args):
    child = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True,
                           timeout=600)
    assert child.returncode == 0, child.stderr[-4000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The plain model and its logits, and what loading and saving through ours gave."""
    d = tmp_path_factory.mktemp("transformers")
    plain = d / "plain"
    run(MAKE, "plain", plain, d / "plain.npy")
    run(LOAD, "ours", plain, d / "ours.npy")
    # save_pretrained through ours and, beside it, through safetensors (a loaded model
    # shards as a fresh one doesn't: its tensors were cut from each file's one storage)
    run(ROUND_TRIP, "ours", plain, d / "round.npy", d / "saved")
    run(ROUND_TRIP, "plain", plain, d / "round-plain.npy", d / "saved-plain")
    return d


def test_from_pretrained_and_save_pretrained_through_ztensor_c(runs):
    plain, saved, saved_plain = runs / "plain", runs / "saved", runs / "saved-plain"
    index = json.loads((plain / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1  # sharded, as the test means
    assert "lm_head.weight" not in index["weight_map"]  # tied: saved once
    want = np.load(runs / "plain.npy")
    assert want.shape == (1, 8, 96) and np.isfinite(want).all()
    # from_pretrained through ours, of safetensors' files: bit-equal logits
    assert np.load(runs / "ours.npy").tobytes() == want.tobytes()
    # save_pretrained through ours, then from_pretrained of that through ours
    assert np.load(runs / "round.npy").tobytes() == want.tobytes()
    assert np.load(runs / "round-plain.npy").tobytes() == want.tobytes()
    index = json.loads((saved / "model.safetensors.index.json").read_text())
    index_plain = json.loads((saved_plain / "model.safetensors.index.json").read_text())
    assert index["weight_map"] == index_plain["weight_map"]  # the same shards, found through storage_ptr/size
    assert "lm_head.weight" not in index["weight_map"]
    for shard in sorted(set(index["weight_map"].values())):
        ours, theirs = ztensor_c.Reader(saved / shard), ztensor_c.Reader(saved_plain / shard)
        assert sorted(ours.keys()) == sorted(theirs.keys())
        for name in theirs.keys():
            assert ours[name].tobytes() == theirs[name].tobytes(), name


def test_what_save_pretrained_wrote_through_ztensor_c_is_safetensors(runs):
    saved, saved_plain = runs / "saved", runs / "saved-plain"
    index = json.loads((saved / "model.safetensors.index.json").read_text())
    for shard in set(index["weight_map"].values()):
        assert (saved / shard).read_bytes() == (saved_plain / shard).read_bytes(), shard
    run(LOAD, "plain", saved, runs / "theirs.npy")
    assert np.load(runs / "theirs.npy").tobytes() == np.load(runs / "plain.npy").tobytes()
