"""The real pair's measuring step (experiments.model_zoo.realpair_card) without its weights: the models, the card builders
and the record reader are stand-ins, so what is tested is this module's own work — which records and K values it
asks for, what it writes where, and the position-weighted pooling of α(K)."""
import types

import pandas as pd
import pytest

from specedge.experiments.model_zoo import realpair_card as card
from specedge.zoo import realpair


class Tok:
    """A tokenizer stand-in: one id per character, a vocabulary of 50."""

    def __len__(self):
        return 50

    def __call__(self, text, add_special_tokens=True):
        assert add_special_tokens is False                 # prompts are raw continuations (the template is in the text)
        return {"input_ids": [ord(c) % 50 for c in text]}


def _records(asked):
    def records(domain, n, tok):
        asked.append((domain, n))
        return [dict(prompt=f"{domain}:{i}", completion="x") for i in range(n)]
    return records


def test_teacher_reads_n_records_of_every_domain_and_adds_alpha_of_k_with_the_full_vocabulary(monkeypatch):
    asked, got = [], {}
    monkeypatch.setattr(card, "records", _records(asked))
    monkeypatch.setattr(card, "teacher_card", lambda d, t, tok, recs, max_len, extra, progress: got.update(
        recs=recs, max_len=max_len, extra=extra, progress=progress) or ("card", "topk"))
    calls = []
    monkeypatch.setattr(card, "zheng2025", types.SimpleNamespace(
        topk_alpha=lambda q, p, ks, temperatures: calls.append((q, p, ks, temperatures)) or pd.DataFrame([dict(K=1, alpha=0.5)])))
    say = print
    assert card.teacher("draft", "target", Tok(), n_records=3, max_len=64, progress=say) == ("card", "topk")
    assert asked == [(d, 3) for d in realpair.ALL_DOMAINS] and list(got["recs"]) == list(realpair.ALL_DOMAINS)
    assert got["max_len"] == 64 and got["progress"] is say
    assert got["extra"]("q", "p") == [dict(K=1, alpha=0.5)]         # records, one per (K, temperature)
    (q, p, ks, temps), = calls
    assert (q, p) == ("q", "p") and ks == (1, 3, 32, 320, 3_200, 32_000, 50) and temps == (0.0, 1.0)


def test_live_tokenises_each_domains_prompts_and_passes_the_settings_through(monkeypatch):
    asked, got = [], {}
    monkeypatch.setattr(card, "records", _records(asked))
    monkeypatch.setattr(card, "live_rounds", lambda d, t, prompts, new, gammas, temps, **kw: got.update(
        prompts=prompts, new=new, gammas=gammas, temps=temps, **kw) or ("table", "traces"))
    tok = Tok()
    out = card.live("draft", "target", tok, n_prompts=2, max_new_tokens=8, gammas=(2, 4), temperatures=(0.0,), seed=5,
                    checkpoint="ck")
    assert out == ("table", "traces") and asked == [(d, 2) for d in realpair.ALL_DOMAINS]
    code = realpair.ALL_DOMAINS[0]
    assert got["prompts"][code] == [tok(f"{code}:0", add_special_tokens=False)["input_ids"],
                                     tok(f"{code}:1", add_special_tokens=False)["input_ids"]]
    assert (got["new"], got["gammas"], got["temps"], got["seed"]) == (8, (2, 4), (0.0,), 5)
    assert got["tokenizer"] is tok and got["checkpoint"] == "ck"


def test_pooled_topk_weights_each_domain_by_its_positions(monkeypatch):
    """K = 1 at T = 0: domain a α 0.5 over 100 positions, b α 0.8 over 300 -> (50 + 240) / 400 = 0.725, not the plain
    mean 0.65; each (T, K) on its own."""
    t = pd.DataFrame(dict(domain=["a", "b", "a", "b", "a"], temperature=[0.0, 0.0, 1.0, 1.0, 0.0], K=[1, 1, 1, 1, 32],
                          alpha=[0.5, 0.8, 0.2, 0.4, 0.9], positions=[100, 300, 100, 100, 10]))
    monkeypatch.setattr(card, "load", lambda name: t if name == "topk_acceptance" else pytest.fail(name))
    got = card.pooled_topk()
    assert list(got.columns) == ["temperature", "K", "alpha", "positions"]
    by = got.set_index(["temperature", "K"])
    assert by.loc[(0.0, 1), "alpha"] == pytest.approx(0.725) and by.loc[(0.0, 1), "positions"] == 400
    assert by.loc[(1.0, 1), "alpha"] == pytest.approx(0.3) and by.loc[(0.0, 32), "alpha"] == pytest.approx(0.9)


def test_pooled_topk_of_the_committed_card_stays_within_its_domains():
    t = realpair.load("topk_acceptance")
    got = card.pooled_topk().set_index(["temperature", "K"])
    span = t.groupby(["temperature", "K"]).alpha.agg(["min", "max"])
    assert ((got.alpha >= span["min"] - 1e-12) & (got.alpha <= span["max"] + 1e-12)).all()
    assert (got.positions == t.groupby(["temperature", "K"]).positions.sum()).all()


@pytest.fixture
def measured(tmp_path, monkeypatch):
    """The committed files' places moved to a temporary folder."""
    monkeypatch.setattr(card, "MEASURED", tmp_path / "realpair")
    for name in ("acceptance_teacher", "topk_acceptance", "live_acceptance"):
        monkeypatch.setitem(realpair.FILES, name, tmp_path / "realpair" / f"{name}.csv")
    monkeypatch.setattr(card, "TRACES", tmp_path / "traces.csv.gz")
    return tmp_path


def test_write_live_writes_the_table_at_six_digits_and_the_traces(measured, monkeypatch):
    saved = []
    monkeypatch.setattr(card.decoding, "save_traces", lambda traces, path: saved.append((traces, path)))
    (measured / "realpair").mkdir()
    card._write_live(pd.DataFrame(dict(domain=["code"], acceptance=[0.123456789])), "traces")
    assert (measured / "realpair" / "live_acceptance.csv").read_text() == "domain,acceptance\ncode,0.123457\n"
    assert saved == [("traces", measured / "traces.csv.gz")]


def test_main_runs_the_steps_it_is_asked_for_and_writes_their_files(measured, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(card.torch, "set_num_threads", lambda n: ran.append(("threads", n)))
    monkeypatch.setattr(card, "load_pair", lambda d, t, dtype: ran.append(("load", d, t, str(dtype))) or ("D", "T", Tok()))
    teacher_card = pd.DataFrame(dict(domain=["code", "code"], temperature=[0.0, 1.0], alpha=[0.61234, 0.5]))
    monkeypatch.setattr(card, "teacher", lambda d, t, tok: ran.append("teacher") or (teacher_card, pd.DataFrame(dict(K=[1]))))
    monkeypatch.setattr(card, "live", lambda d, t, tok, gammas, checkpoint: ran.append(("live", gammas, checkpoint))
                        or (pd.DataFrame(dict(gamma=list(gammas))), None))
    assert card.main(["teacher", "--threads", "3", "--dtype", "float32"]) == 0
    assert ran == [("threads", 3), ("load", realpair.DRAFT, realpair.TARGET, "torch.float32"), "teacher"]
    assert (measured / "realpair" / "acceptance_teacher.csv").read_text().splitlines()[1] == "code,0,0.61234"
    assert (measured / "realpair" / "topk_acceptance.csv").exists() and "0.612" in capsys.readouterr().out
    ran.clear()
    assert card.main(["live", "--gammas", "2", "3"]) == 0
    assert ran[-1] == ("live", (2, 3), card._write_live) and "teacher" not in ran
    ran.clear()
    assert card.main([]) == 0                                       # default: both steps
    assert "teacher" in ran and ran[-1][0] == "live" and ran[-1][1] == (4,)
    with pytest.raises(SystemExit):
        card.main(["nope"])
