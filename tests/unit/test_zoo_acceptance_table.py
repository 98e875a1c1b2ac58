"""``zoo.acceptance``'s teacher-forced table and its command on tiny stand-ins: at T = 0 the acceptance is the argmax
agreement of the two models on the reference text, worked here from their logits directly."""
import pandas as pd
import pytest
import torch

from _stand_ins import CharTokenizer, llama
from specedge.zoo import acceptance
from specedge.zoo.corpus import DOMAINS

RECORDS = [dict(prompt="abc", completion="defgh"), dict(prompt="xy", completion="zzzq")]


@pytest.fixture
def stand_ins(monkeypatch):
    models = {"t": llama(3, seed=0), "d": llama(2, seed=1)}
    monkeypatch.setattr(acceptance, "load_tokenizer", lambda: CharTokenizer(keep=100))
    monkeypatch.setattr(acceptance, "load_model", lambda name: models[name])
    monkeypatch.setattr(acceptance, "eval_records", lambda domain, n: RECORDS[:n])
    return models


def _argmax_agreement(models):
    tok = CharTokenizer(keep=100)
    agree, n = 0, 0
    for r in RECORDS:
        ids = tok(r["prompt"])["input_ids"] + tok(r["completion"])["input_ids"]
        c = len(tok(r["completion"])["input_ids"])
        with torch.no_grad():
            lt, ld = (models[k](input_ids=torch.tensor([ids])).logits[0, len(ids) - 1 - c: len(ids) - 1] for k in ("t", "d"))
        agree += int((lt.argmax(-1) == ld.argmax(-1)).sum())
        n += c
    return agree / n, n


def test_table_rows_per_pair_domain_and_temperature(stand_ins):
    df = acceptance.table(n_records=2, drafts=("d",), targets=("t",))
    assert len(df) == len(DOMAINS) * 3 and list(df.columns) == ["draft", "target", "domain", "temperature",
                                                                         "alpha", "positions"]
    want, n = _argmax_agreement(stand_ins)
    greedy = df[df.temperature == 0.0]
    assert (greedy.alpha == round(want, 4)).all() and (df.positions == n).all() and n == 9
    # at T > 0 sum_v min(p, q) lies in (0, 1]: two different random models never agree fully
    assert df[df.temperature > 0].alpha.between(0, 1, inclusive="right").all()
    same = acceptance.table(n_records=1, drafts=("t",), targets=("t",))
    assert (same.alpha == 1.0).all() and (same.positions == 5).all()          # a model against itself: always accepted


def test_main_writes_the_table_beside_the_zoo_and_prints_its_range(monkeypatch, tmp_path, capsys):
    df = pd.DataFrame(dict(draft=["d", "d"], target=["t", "t"], domain=["chat", "code"], temperature=[0.0, 1.0],
                           alpha=[0.25, 0.75], positions=[9, 9]))
    monkeypatch.setattr(acceptance, "table", lambda: df)
    monkeypatch.setattr(acceptance.paths, "ZOO", tmp_path)
    threads = torch.get_num_threads()
    try:
        assert acceptance.main() is df
    finally:
        torch.set_num_threads(threads)
    assert pd.read_csv(tmp_path / "acceptance.csv").equals(df)
    assert "range over pairs x domains x T: 0.250 .. 0.750" in capsys.readouterr().out


def test_encoded_prompts_use_no_special_tokens(monkeypatch):
    monkeypatch.setattr(acceptance, "eval_prompts", lambda domain, n: ["ab", "cd", "ef"][:n])
    seen = []

    class Tok(CharTokenizer):
        def __call__(self, text, add_special_tokens=True):
            seen.append(add_special_tokens)
            return super().__call__(text)

    assert acceptance.encoded_prompts("chat", 2, Tok()) == [[ord("a") % 48, ord("b") % 48], [ord("c") % 48, ord("d") % 48]]
    assert seen == [False, False]
