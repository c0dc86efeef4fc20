"""ztensor_c.torch and framework "pt": against safetensors.torch where it applies.

Every case needs PyTorch: without it they skip, saying why (see conftest.TORCH_MISSING)."""

import os

import numpy as np
import pytest

import ztensor_c
from conftest import TORCH_MISSING

torch = pytest.importorskip("torch", reason=TORCH_MISSING)
import safetensors.torch as st_torch  # noqa: E402  (needs torch)

import ztensor_c.torch as zt_torch  # noqa: E402

pytestmark = pytest.mark.torch
CUDA = torch.cuda.is_available()


def sample():
    g = torch.Generator().manual_seed(0)
    return {
        "f32": torch.randn(4, 5, generator=g),
        "f64": torch.randn(3, generator=g, dtype=torch.float64),
        "f16": torch.randn(2, 3, generator=g).half(),
        "bf16": torch.randn(6, 2, generator=g).bfloat16(),
        "i64": torch.arange(-3, 3),
        "i8": torch.tensor([-128, 0, 127], dtype=torch.int8),
        "u8": torch.arange(0, 250, 7, dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "f8": torch.tensor([0.5, 1.0, -2.0]).to(torch.float8_e4m3fn),
        "f8e5": torch.tensor([0.25, 4.0]).to(torch.float8_e5m2),
        "c64": torch.tensor([1 + 2j, -3j], dtype=torch.complex64),
        "scalar": torch.tensor(2.5),
    }


def assert_same(ours, theirs):
    assert sorted(ours) == sorted(theirs)
    for k in theirs:
        assert ours[k].dtype == theirs[k].dtype, k
        assert ours[k].shape == theirs[k].shape, k
        a, b = ours[k].cpu(), theirs[k].cpu()
        assert torch.equal(a.view(torch.uint8) if a.dtype.itemsize == 1 and a.is_floating_point() else a,
                           b.view(torch.uint8) if b.dtype.itemsize == 1 and b.is_floating_point() else b), k


@pytest.mark.parametrize("compress", [None, True])
def test_save_file_load_file(tmp_path, compress):
    path = tmp_path / "m.zt"
    zt_torch.save_file(sample(), path, metadata={"k": "v"}, compress=compress)
    assert_same(zt_torch.load_file(path), sample())
    assert ztensor_c.Reader(path).attributes == {"k": "v"}
    assert_same(zt_torch.load(zt_torch.save(sample())), sample())


def test_load_file_of_safetensors_equals_safetensors(tmp_path):
    path = tmp_path / "m.safetensors"
    st = {k: v for k, v in sample().items() if k not in ("f8e5",)}
    st_torch.save_file(st, path)
    assert_same(zt_torch.load_file(path), st_torch.load_file(path))


def test_raw_tensors_share_the_file_copy_on_write(tmp_path):
    path = tmp_path / "m.zt"
    zt_torch.save_file({"a": torch.arange(16, dtype=torch.float32), "b": torch.ones(4)}, path)
    before = path.read_bytes()
    t = zt_torch.load_file(path)
    # both views of one storage: the file mapped once, by torch, privately
    assert t["a"].untyped_storage().data_ptr() == t["b"].untyped_storage().data_ptr()
    # the file mapped as float32 elements: every whole one of them
    assert t["a"].untyped_storage().nbytes() == os.path.getsize(path) // 4 * 4
    assert t["a"].data_ptr() - t["a"].untyped_storage().data_ptr() == \
        ztensor_c.Reader(path).metadata("a").components["data"]["offset"]
    t["a"][0] = 100.0  # copy-on-write: this process's page only
    assert t["a"][0].item() == 100.0
    assert path.read_bytes() == before
    c = zt_torch.load_file(path, copy=True)
    assert c["a"][0].item() == 0.0 and c["a"].untyped_storage().data_ptr() != c["b"].untyped_storage().data_ptr()


def test_compressed_and_quantized(tmp_path, vectors):
    path = tmp_path / "z.zt"
    zt_torch.save_file({"z": torch.arange(1000, dtype=torch.int32)}, path, compress=True)
    z = zt_torch.load_file(path)["z"]
    assert torch.equal(z, torch.arange(1000, dtype=torch.int32))
    q = zt_torch.load_file(vectors / "dequant" / "dequant.gguf")
    expected = ztensor_c.Reader(vectors / "dequant" / "dequant.gguf")["rand.q4_k"]
    assert q["rand.q4_k"].dtype == torch.float32
    assert torch.equal(q["rand.q4_k"], torch.from_numpy(expected))


def test_shared_tensors(tmp_path):
    w = torch.randn(4, 3)
    with pytest.raises(RuntimeError, match="share memory"):
        zt_torch.save_file({"a": w, "b": w}, tmp_path / "x.zt")
    with pytest.raises(RuntimeError, match="share memory"):
        zt_torch.save_file({"a": w, "b": w[1:]}, tmp_path / "x.zt")
    # disjoint parts of one storage don't overlap: not shared (but not contiguous alone? they are)
    zt_torch.save_file({"a": w[:2], "b": w[2:]}, tmp_path / "parts.zt")
    with pytest.raises(ValueError, match="contiguous"):
        zt_torch.save_file({"t": w.t()}, tmp_path / "x.zt")
    assert not (tmp_path / "x.zt").exists()


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # tied, as language models do
        self.norm = torch.nn.LayerNorm(4)


def test_save_model_load_model(tmp_path):
    path = tmp_path / "tied.zt"
    model = Tied()
    zt_torch.save_model(model, path, metadata={"arch": "tied"})
    r = ztensor_c.Reader(path)
    assert "head.weight" not in r and "embed.weight" in r
    assert r.attributes == {"arch": "tied", "head.weight": "embed.weight"}
    other = Tied()
    missing, unexpected = zt_torch.load_model(other, path)
    assert (missing, unexpected) == (set(), [])
    for k, v in model.state_dict().items():
        assert torch.equal(other.state_dict()[k], v), k
    assert other.head.weight.data_ptr() == other.embed.weight.data_ptr()
    lone = torch.nn.Linear(4, 2)
    with pytest.raises(RuntimeError, match="Missing key"):
        zt_torch.load_model(lone, path)
    missing, unexpected = zt_torch.load_model(lone, path, strict=False)
    assert missing == {"weight", "bias"} and "embed.weight" in unexpected


def test_safe_open_pt(tmp_path):
    path = tmp_path / "m.zt"
    zt_torch.save_file(sample(), path)
    with ztensor_c.safe_open(path, framework="pt", device="cpu") as f:
        assert f.keys() == sorted(sample())
        assert torch.equal(f.get_tensor("f32"), sample()["f32"])
        s = f.get_slice("f32")
        assert s.get_shape() == [4, 5] and s.get_dtype() == "F32"
        assert torch.equal(s[1:3, ::2], sample()["f32"][1:3, ::2])
        assert f.get_tensor("bf16").dtype == torch.bfloat16
        assert torch.equal(f.get_slice("bf16")[2:4], sample()["bf16"][2:4])


@pytest.mark.skipif(not CUDA, reason="no CUDA device")
def test_cuda(tmp_path):
    path = tmp_path / "m.zt"
    zt_torch.save_file(sample(), path, compress=True)
    t = zt_torch.load_file(path, device="cuda:0")
    assert all(v.device.type == "cuda" for v in t.values())
    assert_same(t, sample())
    with ztensor_c.safe_open(path, framework="pt", device=0) as f:
        assert f.get_tensor("f32").device == torch.device("cuda:0")
        assert f.get_slice("f32")[1:2].device == torch.device("cuda:0")
    x = torch.from_dlpack(ztensor_c.Reader(path).tensor("f32")).to("cuda")
    assert torch.equal(x.cpu(), sample()["f32"])
