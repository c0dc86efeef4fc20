"""Every code block of python/README.md runs (the README's examples are tested here, on
files made like the ones they name)."""

import os
import re
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy as st_numpy

import ztensor_c

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
FENCE = re.compile(r"(?:<!-- readme-test: (?P<note>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)```", re.S)


def blocks():
    with open(README) as f:
        text = f.read()
    out = []
    for k, m in enumerate(FENCE.finditer(text)):
        line = text[:m.start()].count("\n") + 1
        out.append(pytest.param(m.group("lang"), m.group("note") or "", m.group("code"), id=f"line{line}"))
    return out


@pytest.fixture
def workdir(tmp_path, vectors):
    tensors = {"tok_embeddings.weight": np.arange(512, dtype=np.float32).reshape(32, 16).astype(ml_dtypes.bfloat16),
               "norm.weight": np.linspace(0, 1, 16, dtype=np.float32)}
    with ztensor_c.Writer(tmp_path / "model.zt") as w:
        for name, a in tensors.items():
            w.add(name, a)
    st_numpy.save_file(tensors, tmp_path / "model.safetensors", metadata={"source": "readme"})
    shutil.copy(vectors / "gguf" / "llama_tiny.gguf", tmp_path / "model.gguf")
    return tmp_path


@pytest.mark.parametrize("lang,note,code", blocks())
def test_readme_block(workdir, lang, note, code):
    if note.startswith("skip"):
        assert lang in ("sh", "python"), "an annotated block"
        pytest.skip(note)
    if note == "torch":
        pytest.importorskip("torch", reason="torch is not installed (the block uses it)")
    elif note:
        pytest.fail(f"unknown annotation {note!r}")
    assert lang == "python", f"a {lang or 'untagged'} block must be annotated skip"
    script = workdir / "block.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], cwd=workdir, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_the_readme_has_blocks():
    assert len(blocks()) >= 8
