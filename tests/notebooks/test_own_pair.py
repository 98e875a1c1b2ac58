"""A researcher's own model pair, end to end: a tiny random Llama pair saved to a temporary folder loads
(tokenizer fallback), measuring it writes a new profile and never a committed one, and the zheng2025
notebook run on it writes its own output folder, never the committed figures."""
import json
import shutil

import pytest
import torch

from specedge import paths, zoo
from specedge.experiments.zheng2025 import figures as zheng2025_figures, measure as zheng2025_measure


def _tiny(path, vocab: int = 8192, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512)
    LlamaForCausalLM(cfg).save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("own_pair")
    return _tiny(root / "mydraft", seed=1), _tiny(root / "mytarget", seed=2), root


def test_a_bare_local_pair_falls_back_to_the_zoo_tokenizer(pair):
    draft, target, _ = pair
    d, t, tok = zoo.load_pair(draft, target)
    assert len(tok) == t.config.vocab_size == d.config.vocab_size == 8192
    assert tok("def f(x):")["input_ids"] == zoo.load_tokenizer()("def f(x):")["input_ids"]


def test_a_bare_local_target_with_another_vocabulary_says_what_is_missing(pair, tmp_path):
    draft, _, _ = pair
    other = _tiny(tmp_path / "other", vocab=1000)
    with pytest.raises(FileNotFoundError, match="no tokenizer files .* is not the zoo tokenizer's"):
        zoo.load_pair(draft, other)


def test_measuring_a_pair_writes_a_new_profile_and_leaves_committed_ones(pair, tmp_path, monkeypatch):
    draft, target, _ = pair
    profiles = tmp_path / "profiles"
    shutil.copytree(paths.PROFILES, profiles)
    monkeypatch.setattr(paths, "PROFILES", profiles)
    before = (profiles / "zoo_cpu.yaml").read_bytes()
    name = zheng2025_figures.pair_profile_name([draft, target])
    assert name == "measured_mydraft__mytarget" and zheng2025_figures.pair_profile_name(["draft-xs", "target-m"]) == "zoo_cpu"
    with pytest.raises(SystemExit, match="would replace them"):
        zheng2025_measure.main(["measure", "--models", f"{draft},{target}", "--profile", "zoo_cpu"])
    assert zheng2025_measure.main(["measure", "--models", f"{draft},{target}"]) == 0
    assert (profiles / "zoo_cpu.yaml").read_bytes() == before
    from specedge import hardware
    prof = hardware.load_profile(name)
    assert sorted(prof.runtime) == sorted([draft, target]) and prof.coefficients(target)["decode_s"] > 0


def test_the_notebook_on_an_own_pair_writes_its_own_folder(pair, tmp_path, monkeypatch):
    import papermill as pm

    draft, target, root = pair
    monkeypatch.setenv("SPECEDGE_SCALE", "ci")
    prof = root / "profiles"
    prof.mkdir(exist_ok=True)
    zheng2025_measure.main(["measure", "--models", f"{draft},{target}", "--profile", str(prof / "measured_mine.yaml")])
    committed = {p: p.read_bytes() for p in (paths.FIGURES / "zheng2025").glob("*") if p.is_file()}
    pm.execute_notebook(str(paths.NOTEBOOKS / "zheng2025_tk_slt.ipynb"), str(tmp_path / "out.ipynb"),
                        kernel_name="python3", progress_bar=False,
                        parameters=dict(scale="ci", draft=draft, target=target,
                                        measured_profile=str(prof / "measured_mine.yaml")))
    out = paths.BUILD / "ci" / "figures" / "zheng2025" / "pair-mydraft__mytarget_measured-measured_mine"
    rows = (out / "comparison.csv").read_text()
    assert "mydraft" in rows or "mytarget" in rows or len(rows.splitlines()) > 1
    assert {p: p.read_bytes() for p in committed} == committed
    json.loads((tmp_path / "out.ipynb").read_text())
