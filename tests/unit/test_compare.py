"""The comparison contract (specedge.compare): each row is a reproduction, an analytic row or a setting;
checks (ours against ours) go to their own table; statuses come from code and no row can excuse itself."""
import math

import pandas as pd
import pytest

from specedge import claims, compare, papers, paths


# --- add: numbers ---------------------------------------------------------------------------------
def test_add_decides_match_or_deviates_and_writes_the_columns(tmp_path):
    c = compare.Comparison("x")
    assert c.add("T", "a", 1.0, 1.04, tolerance=0.05, null=0.5) == "match"
    with pytest.raises(ValueError, match="note"):
        c.add("T", "b", 1.0, 2.0, tolerance=0.05, null=0.5, cause="models")
    with pytest.raises(ValueError, match="needs a cause"):
        c.add("T", "b", 1.0, 2.0, tolerance=0.05, null=0.5, note="the zoo model differs in size")
    assert c.add("T", "b", 1.0, 2.0, tolerance=0.05, null=0.5, note="the zoo model differs in size",
                 cause="models", models="zoo") == "deviates"
    with pytest.raises(ValueError, match="claim\\(\\) or state"):
        c.add("T", "c", "x", "y", tolerance=0, null=0)
    with pytest.raises(ValueError, match="tolerance"):
        c.add("T", "c", 1.0, 1.0, null=0.0)
    with pytest.raises(ValueError, match="cause must be one of"):
        c.add("T", "c", 1.0, 1.0, tolerance=0.1, null=0.0, cause="luck")
    with pytest.raises(ValueError, match="models must be one of"):
        c.add("T", "c", 1.0, 1.0, tolerance=0.1, null=0.0, models="gpu")
    df = pd.read_csv(c.write(tmp_path), dtype=str, keep_default_na=False)
    assert list(df.columns) == compare.COLUMNS and list(df.status) == ["match", "deviates"]
    assert list(df.cause) == ["", "models"] and list(df.kind) == ["reproduction"] * 2
    assert not (tmp_path / "checks.csv").exists()
    assert compare.problems(df) == []


def test_a_reproduction_needs_a_null_that_its_tolerance_rejects():
    c = compare.Comparison("x")
    with pytest.raises(ValueError, match="needs its null"):
        c.add("T", "speedup", 1.5, 1.5, tolerance=0.1)
    with pytest.raises(ValueError, match="cannot fail"):
        c.add("T", "speedup", 1.05, 1.0, tolerance=0.05, null=1.0)
    assert c.add("T", "speedup", 1.05, 1.04, tolerance=0.025, null=1.0) == "match"
    # a deviation whose tolerance accepts the null is still informative: it is allowed
    assert c.add("T", "speedup", 1.05, 1.0, tolerance=0.025, null=1.0, note="no pre-draft ever hit the cache",
                 cause="models") == "deviates"
    # analytic rows need no null: they fail only through a formula error
    assert c.analytic("Table I", "gamma*", 3, 3, tolerance=0) == "match"
    assert c.rows[-1]["kind"] == "analytic" and c.rows[-1]["models"] == "paper"
    assert c.frame().null.tolist()[:1] == [1.0]


@pytest.mark.parametrize("old", [dict(null_why="a level, not an effect"), dict(status="match")])
def test_old_signatures_and_typed_statuses_raise_typeerror(old):
    c = compare.Comparison("x")
    with pytest.raises(TypeError):
        c.add("T", "q", 1.0, 1.0, tolerance=0, null=0.0, **old)
    with pytest.raises(TypeError):
        c.claim("T", "q", "yes", claims.above(2.0, 1.0), null_claim=claims.above(1.0, 1.0), **old)
    with pytest.raises(TypeError):
        compare.Cell(**{k: v for k, v in old.items() if k == "null_why"} or {"status": "match"})
    assert not c.rows


def test_add_with_a_censored_bound_needs_a_cause():
    c = compare.Comparison("x")
    assert c.add("T", "cap", 600, 512, tolerance=50, null=0, bound=">=", cause="hardware",
                 note="the sweep stops at 512 devices") == "not-reproducible"
    assert c.rows[-1]["reproduced"] == "≥512"
    with pytest.raises(ValueError, match="cause"):
        c.add("T", "cap", 100, 512, tolerance=50, null=0, bound=">=", note="the sweep stops at 512 devices")


# --- claims ----------------------------------------------------------------------------------------
def test_claim_needs_a_null_claim_that_fails():
    c = compare.Comparison("x")
    falls = claims.strictly_decreasing([3, 2, 1])
    flat = claims.strictly_decreasing([2, 2, 2])
    with pytest.raises(ValueError, match="null_claim"):
        c.claim("T", "falls", "decreasing", falls)
    with pytest.raises(ValueError, match="cannot fail"):
        c.claim("T", "falls", "decreasing", falls, null_claim=claims.strictly_decreasing([5, 4, 3]))
    assert c.claim("T", "falls", "decreasing", falls, null_claim=flat) == "trend"
    assert c.rows[-1]["null_evidence"].startswith("fails: constant")
    assert c.claim("T", "falls", "decreasing", falls, null_claim=flat, strength="match") == "match"
    with pytest.raises(ValueError, match="needs a cause"):
        c.claim("T", "falls", "decreasing", flat, null_claim=flat)
    assert c.claim("T", "falls", "decreasing", flat, null_claim=flat, cause="unexplained") == "deviates"
    row = c.rows[-1]
    assert row["predicate"] == "strictly_decreasing" and row["evidence"].startswith("constant")
    assert "strictly_decreasing fails" in row["note"] and row["cause"] == "unexplained"
    with pytest.raises(TypeError, match="Claim"):
        c.claim("T", "q", "yes", True, null_claim=flat)
    assert c.analytic("Fig 2", "S < 1", "–", claim=claims.below(0.9, 1.0)) == "trend"   # no null needed
    assert compare.problems(c.frame().astype(str).replace({"None": ""})) == []


# --- state, setting, check -------------------------------------------------------------------------
@pytest.mark.parametrize("status", ["match", "trend", "close"])
def test_state_refuses_match_or_trend(status):
    c = compare.Comparison("x")
    with pytest.raises(ValueError, match="only"):
        c.state("T", "q", "yes", "yes", status, note="a long enough note naming a cause", cause="models")
    assert not c.rows


def test_state_needs_a_cause_and_a_note():
    c = compare.Comparison("x")
    with pytest.raises(ValueError, match="note"):
        c.state("T", "q", 1, 2, "deviates", note="differs", cause="models")
    with pytest.raises(ValueError, match="cause"):
        c.state("T", "q", 1, 2, "deviates", note="the zoo's drafts are smaller than the paper's")
    assert c.state("T", "q", 1, 2, "not-reproducible", note="needs the paper's RTX 4500 GPU",
                   cause="hardware") == "not-reproducible"


def test_setting_has_no_status_and_is_not_counted(tmp_path):
    c = compare.Comparison("x")
    assert c.setting("Table II", "link rate", 100, 100, unit="Mbit/s", note="the paper's value, an input") == ""
    with pytest.raises(ValueError, match="setting"):
        c.add("T", "q", 1, 1, tolerance=0, kind="setting")
    assert c.frame().status.tolist() == [""] and c.frame().kind.tolist() == ["setting"]


def test_check_goes_to_its_own_table(tmp_path):
    c = compare.Comparison("x")
    c.add("T", "a", 2.0, 2.0, tolerance=0.1, null=1.0)
    assert c.check("replay vs run", "round time p50", 10.2, 10.0, tolerance=0.5, unit="ms")
    assert not c.check("twin vs real", "goodput p50", 12.0, 10.0, tolerance=0.5)
    assert c.check("Theorem 1 bound", "U below U(x*)", None, "U(x*)", claim=claims.below(0.9, 1.0))
    with pytest.raises(ValueError, match="tolerance or a claim"):
        c.check("x", "y", 1, 1)
    c.write(tmp_path)
    checks = pd.read_csv(tmp_path / "checks.csv", dtype=str, keep_default_na=False)
    assert list(checks.columns) == compare.CHECK_COLUMNS
    assert checks.passed.tolist() == ["True", "False", "True"] and checks.ours[2].startswith("0.9")
    assert compare.problems(checks) == []
    assert len(pd.read_csv(tmp_path / "comparison.csv")) == 1
    compare.Comparison("x").write(tmp_path)            # no checks now: a stale checks.csv goes
    assert not (tmp_path / "checks.csv").exists()


def test_comparison_rows_have_no_float_noise(tmp_path):
    c = compare.Comparison("x")
    c.add("T", "a", 0.62, 0.6204999999999999, tolerance=0.01, null=0.3)
    text = c.write(tmp_path).read_text()
    assert "0.6205," in text and "0.6204999999999999" not in text


def test_null_tolerance_is_half_the_effect():
    assert compare.null_tolerance(1.04, 1.0, 0.05) == pytest.approx(0.02)
    assert compare.null_tolerance(1.94, 1.0, 0.1) == pytest.approx(0.1)          # capped
    assert compare.null_tolerance(0.97, 1.0, 0.1) == pytest.approx(0.015)
    with pytest.raises(ValueError, match="null_tolerance"):
        compare.null_tolerance(1.0, float("nan"), 0.1)


# --- table / extend --------------------------------------------------------------------------------
def test_comparison_table_adds_one_row_per_cell_in_the_papers_order():
    paper = pd.DataFrame({"acc": [0.75, 0.80], "n": [100, 200]}, index=["A", "B"])
    ours = pd.DataFrame({"acc": [0.90, 0.74], "n": [7, 9]}, index=["B", "A"])
    c = compare.Comparison("x")
    c.table("T4", paper, ours, {"acc": compare.Cell(tolerance=lambda p: 0.02, null=0.5, models="zoo", cause="models",
                                                    note=lambda r: f"row {r}: the zoo threshold rule"),
                                "n": compare.Cell("deviates", unit="tokens", quantity="{row} count", cause="our-reading",
                                                  note="counts scale with the test split")},
            lambda r, col: f"t4-{r.lower()} {col}")
    f = c.frame()
    assert list(f.quantity) == ["A acc", "A count", "B acc", "B count"]
    assert list(f.status) == ["match", "deviates", "deviates", "deviates"]
    assert list(f.cause) == ["", "our-reading", "models", "our-reading"] and set(f.models) == {"zoo", ""}
    assert list(f.statements) == ["t4-a acc", "t4-a n", "t4-b acc", "t4-b n"] and f.note[0] == "row A: the zoo threshold rule"
    with pytest.raises(ValueError, match="every row of paper"):
        c.table("T4", paper, ours.drop("A"), {"acc": compare.Cell(tolerance=0.02, null=0.5)}, "t4")
    with pytest.raises(ValueError, match="also accepts the null"):
        c.table("T4", paper.assign(acc=0.51), ours.assign(acc=0.5), {"acc": compare.Cell(tolerance=0.02, null=0.5)}, "t4")


def test_extend_dispatches_add_claim_state_setting_and_check():
    paper = {"t3-wisp": 631.86, "t3-order": "yes", "t3-n": 150}
    c = compare.Comparison("x")
    got = c.extend(pd.DataFrame([dict(artifact="Table 3", quantity="WISP", reproduced=640.0, tolerance=20.0,
                                      null=500.0, statements="t3-wisp")]), paper)
    got += c.extend([dict(artifact="Table 3", quantity="order", paper="yes", claim=claims.ordered([1, 2], ["a", "b"]),
                          null_claim=claims.ordered([1, 1], ["a", "b"]), statements="t3-order"),
                     dict(artifact="Table 3", quantity="load", paper="?", reproduced="–", status="not-reproducible",
                          cause="paper-ambiguity", note="the load is unstated in the paper", statements="t3-order"),
                     dict(artifact="Table 3", quantity="devices", kind="setting", reproduced=150, statements="t3-n"),
                     dict(check="twin vs real", quantity="p50", ours=1.0, reference=1.1, tolerance=0.2)], paper)
    assert got == ["match", "trend", "not-reproducible", "", "passed"]
    f = c.frame()
    assert f.paper.tolist() == [631.86, "yes", "?", 150] and f.kind.tolist()[-1] == "setting"
    assert len(c.checks) == 1
    with pytest.raises(ValueError, match="no 'paper' value"):
        c.extend([dict(artifact="T", quantity="q", reproduced=1.0, tolerance=0.1, null=0.0, statements="unknown")], paper)
    with pytest.raises(TypeError, match="null_why"):
        c.extend([dict(artifact="T", quantity="q", reproduced=631.0, tolerance=1.0, statements="t3-wisp",
                       null_why="a level")], paper)


# --- validate: every rule, and one planted bad row of each kind -------------------------------------
def _good() -> pd.DataFrame:
    c = compare.Comparison("x")
    c.add("Fig 1", "speedup", 1.5, 1.45, tolerance=0.1, null=1.0, models="zoo", statements="f1")
    c.claim("Fig 2", "falls", "decreasing", claims.strictly_decreasing([3, 2, 1]),
            null_claim=claims.strictly_decreasing([2, 2, 2]), statements="f2")
    c.analytic("Table I", "gamma*", 3, 3, tolerance=0, statements="t1")
    c.setting("Table II", "link", 100, 100, unit="Mbit/s", statements="t2")
    c.state("Fig 3", "gain", 20, 95, "deviates", note="the zoo drafts' acceptance sets the gain", cause="models")
    c.analytic("Table 4", "AR->SD by the formula", 1.2, 1.25, tolerance=0.1, unit="x", statements="t4")
    c.add("Table 6", "AR->SD", 1.2, 1.22, tolerance=0.1, null=1.0, unit="x", sibling="AR->SD by the formula", statements="t6")
    c.claim("Table 6", "miss rate within the paper's band", "0.3", claims.within(0.32, 0.25, 0.45),
            null_claim=claims.within(1.0, 0.25, 0.45), unit="fraction", strength="match", statements="t6")
    c.claim("Table 4", "A is best", "A", claims.argmax_is({"A": 3, "B": 1, "C": 2}, "A", margin=0.1),
            null_claim=claims.argmax_is({"A": 3, "B": 1, "C": 2}, "C", margin=0.1), statements="t4")
    c.state("Table 11", "latency on a Pi", 0.35, 0.1, "not-reproducible", cause="hardware",
            note="no Raspberry Pi here; the value is a stand-in measured on another CPU")
    c.analytic("Table 4", "FSD by the formula", 1.2, 2.0, tolerance=0.1, unit="x", cause="paper-ambiguity",
               note="the formula leaves out the threads' costs")
    return c.frame().astype(str).replace({"None": ""})


PLANTED = {
    "match without a null": dict(row=0, null=""),
    "match whose null is within its tolerance": dict(row=0, null="1.45"),
    "match outside its tolerance": dict(row=0, reproduced="2.0"),
    "paper 0 placeholder (ours vs ours)": dict(row=0, paper="0.0", reproduced="0.05", null="1.0", statements=""),
    "claim match without null evidence": dict(row=1, null_evidence=""),
    "claim whose null holds": dict(row=1, null_evidence="holds: 3 > 2 > 1"),
    "setting with a status": dict(row=3, status="match"),
    "deviates without a cause": dict(row=4, cause=""),
    "deviates with an unknown cause": dict(row=4, cause="bad luck"),
    "match with a cause": dict(row=2, cause="models"),
    "unknown kind": dict(row=2, kind="validation"),
    "unknown models": dict(row=0, models="gpu"),
    "a status nothing decided": dict(row=1, predicate=""),
    "unknown paper_source": dict(row=0, paper_source="guessed"),
    "a window over a quarter of the feasible range": dict(row=7, window="0.1..0.9"),
    "a fraction without its feasible range": dict(row=7, feasible=""),
    "an unreadable range": dict(row=7, feasible="zero to one"),
    "a match whose analytic sibling deviates": dict(row=6, sibling="FSD by the formula"),
    "a sibling that is no analytic row": dict(row=6, sibling="speedup"),
    "a ranking null that ties by construction": dict(row=8, null_evidence="fails: tie: A=3, B=1, C=3; margin 0.1"),
    "a ranking null of identical seeds": dict(row=8, predicate="interval_argmax_is",
                                              null_evidence="fails: A vs B: tie: mean diff +0 [+0, +0] (95%, 10 seeds)"),
    "a setting with no value": dict(row=3, reproduced="–"),
    "a setting measured on this host": dict(row=3, note="timed on this CPU"),
    "a not-reproducible whose test ran": dict(row=9, cause="models"),
}


def test_validate_passes_good_rows():
    assert compare.problems(_good()) == []
    compare.validate(_good())


@pytest.mark.parametrize("what", PLANTED)
def test_validate_fails_on_one_planted_bad_row_of_each_kind(what):
    df = _good()
    change = dict(PLANTED[what])
    i = change.pop("row")
    for col, v in change.items():
        df.loc[i, col] = v
    found = compare.problems(df)
    assert len(found) == 1 and found[0].startswith(f"row {i + 2} "), found
    with pytest.raises(ValueError, match="invalid row"):
        compare.validate(df, "planted")


def test_validate_fails_on_an_unknown_column_and_on_a_bad_check():
    assert "unknown ['null_why']" in compare.problems(_good().assign(null_why="a level"))[0]
    checks = pd.DataFrame([dict(check="replay", quantity="p50", ours="1.0", reference="2.0", unit="",
                                tolerance="0.1", passed="True", note="")])
    assert "says otherwise" in compare.problems(checks)[0]
    assert compare.problems(checks.assign(passed="False")) == []
    assert "passed must be" in compare.problems(checks.assign(passed="yes"))[0]


def test_every_committed_comparison_and_checks_file_is_valid():
    """Every committed comparison.csv / checks.csv under figures/ (profile folders too) keeps the contract."""
    found = compare.validate_all(paths.FIGURES)
    assert not found, "\n".join(found[:40]) + f"\n... {len(found)} in all"


# --- the README's results table ---------------------------------------------------------------------
def test_results_table_leads_with_what_could_have_failed(tmp_path):
    c = compare.Comparison("zhu2025")
    c.add("Fig 9", "latency cut", 44.9, 40.0, tolerance=10, null=0.0, models="zoo", statements="f9")
    c.add("Fig 9", "speedup", 2.0, 3.0, tolerance=0.1, null=1.0, models="real pair", cause="hardware",
          note="the CPU's memory bandwidth limits the verifier")
    c.analytic("Eq 7", "optimum", 4, 4, tolerance=0)
    c.setting("Table II", "K", 100, 100)
    c.check("twin vs real", "p50", 1.0, 1.0, tolerance=0.1)
    c.check("twin vs real", "p90", 1.0, 2.0, tolerance=0.1)
    (tmp_path / "zhu2025").mkdir()
    c.write(tmp_path / "zhu2025")
    table = compare.results_table(tmp_path)
    assert "| [zhu2025](figures/zhu2025/comparison.csv) | 2 (1 / 1 / 0 / 0) | 1 | 0 | 1 | hardware 1 | 0 | 1 / 1 | 0 / 0 |" in table
    assert "| **all** | **2** |" in table
    # rows on recovered paper values are counted apart, never as agreement with the paper
    c.add("Table I", "gamma*", 4, 4, tolerance=0, null=1, models="zoo", paper_source="recovered")
    c.analytic("Table I", "gamma* (formula)", 4, 4, tolerance=0, paper_source="read-from-figure")
    c.write(tmp_path / "zhu2025")
    table = compare.results_table(tmp_path)
    assert "| [zhu2025](figures/zhu2025/comparison.csv) | 2 (1 / 1 / 0 / 0) | 1 | 0 | 1 | hardware 1 | 0 | 1 / 1 | 2 / 2 |" in table
    c.rows = c.rows[:-2]
    c.write(tmp_path / "zhu2025")
    assert "Settings (" in table and "zhu2025 1." in table
    assert "zhu2025 1 of 2 pass" in table
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{papers.START}\nold\n{papers.END}\n{compare.START}\nold\n{compare.END}\nrest\n")
    assert not compare.readme_is_fresh(readme, tmp_path)
    assert compare.update_readme(readme, tmp_path)
    assert compare.readme_is_fresh(readme, tmp_path)
    assert readme.read_text().startswith("intro\n") and readme.read_text().endswith("rest\n")
    assert "| `li2026` | WISP: the serving side" in readme.read_text()      # the papers table: the manifest's
    text = readme.read_text()
    readme.write_text(text.replace("| `li2026` |", "| `li2025` |", 1))
    assert not compare.readme_is_fresh(readme, tmp_path)                 # a hand edit of it is stale
    assert compare.update_readme(readme, tmp_path) and readme.read_text() == text
    assert compare.rewrite_block(readme, "x", compare.START, compare.END, check=True)
    with pytest.raises(ValueError, match="no"):
        compare.render_readme("no markers", "t")


def test_load_all_refuses_an_invalid_file(tmp_path):
    (tmp_path / "k").mkdir()
    _good().assign(null_why="").to_csv(tmp_path / "k" / "comparison.csv", index=False)
    with pytest.raises(ValueError, match="null_why"):
        compare.load_all(tmp_path)
    assert len(compare.load_all(tmp_path, check=False)) == len(_good())


def test_unless_null_holds_states_a_row_that_cannot_fail():
    holds, null_holds = claims.below(0.5, 1.0), claims.below(0.9, 1.0)
    row = dict(artifact="T", quantity="q", paper="yes", claim=holds, null_claim=null_holds, strength="match", note="n")
    out = compare.unless_null_holds(row)
    assert out["status"] == "not-reproducible" and out["cause"] == "our-reading" and "null also holds" in out["note"]
    assert compare.unless_null_holds(dict(row, null_claim=claims.below(2.0, 1.0))) is not None
    assert "status" not in compare.unless_null_holds(dict(row, null_claim=claims.below(2.0, 1.0)))
    num = dict(artifact="T", quantity="rate", paper=0.0, reproduced=0.0, tolerance=10.0, null=0.0)
    c = compare.Comparison("x")
    assert c.extend([compare.unless_null_holds(num)]) == ["not-reproducible"]
    assert c.extend([compare.unless_null_holds(dict(num, paper=50.0, reproduced=45.0))]) == ["match"]


def test_print_claims_lists_claim_rows_by_outcome(capsys):
    from specedge import compare as C

    frame = pd.DataFrame(dict(artifact=["T1", "T2", "T3", "T4"], status=["match", "deviates", "not-reproducible", "match"],
                              quantity=["claim: a holds", "claim: b holds", "claim: c holds", "a number"],
                              paper=["yes"] * 4, reproduced=["yes", "no", "–", 1.0]))
    C.print_claims(frame, "the zoo")
    out = capsys.readouterr().out.splitlines()
    assert out == ["holds on the zoo (1):", "  [match] T1: a holds -- paper yes, zoo yes",
                   "does not hold on the zoo (1):", "  [deviates] T2: b holds -- paper yes, zoo no",
                   "not reproducible here (1):", "  [not-reproducible] T3: c holds -- paper yes, zoo –"]


# --- the evidence rules, as the builder applies them ----------------------------------------------------
def test_a_window_over_a_quarter_of_the_feasible_range_cannot_match():
    c = compare.Comparison("x")
    # tau in [1, gamma + 1] at gamma = 4: a band [1.6, 4.5] is 72 % of it
    st = c.claim("Table 6", "tau within the band", "2-4", claims.within(3.2, 1.6, 4.5), null_claim=claims.within(1.0, 1.6, 4.5),
                 strength="match", feasible=(1.0, 5.0))
    assert st == "not-reproducible"
    r = c.rows[-1]
    assert r["cause"] == "our-reading" and "covers 72% of the feasible 1..5" in r["note"] and r["window"] == "1.6..4.5"
    # a rate (unit fraction): [0, 1] by default; 0.5 ± 0.1 is 20 %, 0.5 ± 0.2 is 40 %
    assert c.add("T", "rate a", 0.5, 0.55, unit="fraction", tolerance=0.1, null=1.0) == "match"
    assert c.add("T", "rate b", 0.5, 0.55, unit="fraction", tolerance=0.2, null=1.0) == "not-reproducible"
    assert c.rows[-1]["feasible"] == "0..1"
    # a ratio >= 0 has an unbounded range: no window is a share of it
    assert c.add("T", "ratio", 2.0, 2.4, unit="x", tolerance=0.5, null=1.0, feasible=(0.0, math.inf)) == "match"
    assert compare.problems(c.frame().astype(str).replace({"None": ""})) == []
    assert compare.window_share((0.9, 1.5), (0.0, 1.0)) == pytest.approx(0.1)
    assert compare.window_share(None, (0.0, 1.0)) is None
    with pytest.raises(ValueError, match="low..high"):
        compare.parse_range("1..0")


def test_a_match_whose_analytic_sibling_deviates_deviates():
    c = compare.Comparison("x")
    c.analytic("Table 6", "AR->SD, formula", 1.94, 2.97, tolerance=0.1, unit="x", cause="paper-ambiguity",
               note="the formula leaves out the measured system's costs")
    st = c.add("Table 6", "AR->SD", 1.94, 1.939, tolerance=0.1, null=1.0, unit="x", sibling="AR->SD, formula")
    assert st == "deviates"
    r = c.rows[-1]
    assert r["cause"] == "paper-ambiguity" and "AR->SD, formula" in r["note"] and r["sibling"] == "AR->SD, formula"
    c.analytic("Table 6", "FSD, formula", 1.2, 1.21, tolerance=0.1, unit="x")
    assert c.add("Table 6", "FSD", 1.2, 1.18, tolerance=0.1, null=1.0, unit="x", sibling="Table 6 / FSD, formula") == "match"
    with pytest.raises(ValueError, match="analytic rows of that name"):
        c.add("Table 6", "other", 1.2, 1.18, tolerance=0.1, null=1.0, sibling="no such row")


def test_a_ranking_null_must_name_the_strongest_rival():
    vals = {"MLP": 0.8, "LightGBM": 0.7, "XGBoost": 0.75}
    assert claims.strongest_alternative(vals, "MLP") == "XGBoost"
    assert claims.strongest_alternative(vals, "MLP", lowest=True) == "LightGBM"
    with pytest.raises(ValueError, match="at least one other"):
        claims.strongest_alternative({"MLP": 1.0}, "MLP")
    c = compare.Comparison("x")
    with pytest.raises(ValueError, match="ties by construction"):   # the MLP set to its rival's value: a tie
        c.claim("T4", "MLP best", "MLP", claims.argmax_is(vals, "MLP", margin=0.01),
                null_claim=claims.argmax_is({**vals, "MLP": 0.75}, "MLP", margin=0.01))
    seeds = {"MLP": [0.8, 0.82, 0.81], "LightGBM": [0.7, 0.71, 0.69]}
    with pytest.raises(ValueError, match="ties by construction"):   # every family at the MLP's own values
        c.claim("T4", "MLP best (seeds)", "MLP", claims.interval_argmax_is(seeds, "MLP"),
                null_claim=claims.interval_argmax_is({k: seeds["MLP"] for k in seeds}, "MLP"))
    assert c.claim("T4", "MLP best", "MLP", claims.argmax_is(vals, "MLP", margin=0.01),
                   null_claim=claims.argmax_is(vals, claims.strongest_alternative(vals, "MLP"), margin=0.01)) == "trend"
    # the rival's null can pass: where the rival leads, the null holds and the claim fails
    flip = {"MLP": 0.7, "XGBoost": 0.8}
    assert claims.argmax_is(flip, claims.strongest_alternative(flip, "MLP"), margin=0.01).holds


def test_settings_and_not_reproducible_are_refused_where_a_test_ran():
    c = compare.Comparison("x")
    with pytest.raises(ValueError, match="coverage gap"):
        c.setting("Table I", "70B: C budgets", "16, 20", "–")
    with pytest.raises(ValueError, match="measured on this host"):
        c.setting("Table II", "L(K=3) measured here", 0.07, 0.43)
    with pytest.raises(ValueError, match="the test ran"):
        c.state("Table 2", "speedup vs SLED", 3.38, "undefined", "not-reproducible", cause="our-reading",
                note="no ratio: the baseline serves no device")
    with pytest.raises(ValueError, match="the test ran"):
        c.state("Table 2", "speedup", 3.38, 5.1, "not-reproducible", cause="models", note="the zoo's acceptance differs")
    # could not be tested: the hardware is absent (a stand-in), nothing ran, or code found the run undecidable
    assert c.state("Table 11", "Pi latency", 0.35, 0.1, "not-reproducible", cause="hardware",
                   note="no Raspberry Pi here: measured on this CPU as a stand-in") == "not-reproducible"
    assert c.state("Table I", "70B: C budgets", "16, 20", "–", "not-reproducible", cause="models",
                   note="not run, a coverage gap: the zoo has one model family") == "not-reproducible"
    assert c.state("Table 2", "speedup vs SLED", 3.38, "unbounded (SLED serves 0)", "deviates", cause="paper-ambiguity",
                   note="SLED serves no device of this class: the ratio is unbounded") == "deviates"


def test_paper_source_comes_from_the_statements():
    c = compare.Comparison("zheng2025")
    c.analytic("Table I", "gamma* (alpha=0.4, L=0.01)", 4, 4, tolerance=0, statements="table1-a0.4-L0.01")
    c.analytic("Table II", "L trend", "yes", claim=claims.all_of({"a": True}), statements="table2-L-trend")
    c.setting("Sec VI-B", "uplink", 100, 100, statements="table2-L-K3", paper_source="recovered")
    assert [r["paper_source"] for r in c.rows] == ["recovered", "stated", "recovered"]
    with pytest.raises(ValueError, match="paper_source must be one of"):
        c.setting("Sec VI-B", "uplink", 100, 100, paper_source="guessed")


def test_audit_lists_every_green_reproduction_with_its_evidence(tmp_path, capsys):
    (tmp_path / "k").mkdir()
    _good().to_csv(tmp_path / "k" / "comparison.csv", index=False)
    a = compare.audit(tmp_path)
    assert list(a.quantity) == ["speedup", "falls", "AR->SD", "miss rate within the paper's band", "A is best"]
    row = a.set_index("quantity")
    assert row.at["speedup", "margin_noise"] == "null at 5.0 tolerances"
    assert row.at["miss rate within the paper's band", "window_share"] == "20% of 0..1"
    assert row.at["AR->SD", "sibling"] == "AR->SD by the formula: match"
    assert row.at["A is best", "null"] == "fails: A by 1 (A=3, B=1, C=2); margin 0.1"   # C named best: A still leads
    assert row.at["A is best", "margin_noise"] == "margin 0.1"
    assert compare.main(["--audit", "--figures", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "== k: 5 green reproduction rows" in out and "every committed file keeps every rule" in out
    bad = _good()
    bad.loc[7, "window"] = "0.1..0.9"   # a planted violation: --audit and --validate both fail
    bad.to_csv(tmp_path / "k" / "comparison.csv", index=False)
    assert compare.main(["--audit", "--figures", str(tmp_path)]) == 1
    assert compare.main(["--validate", "--figures", str(tmp_path)]) == 1
    assert "covers 80% of the feasible 0..1" in capsys.readouterr().out
    assert row.at["speedup", "window_share"] == "undeclared"


def test_audit_runs_over_the_committed_files(capsys):
    """``python -m specedge.compare --audit`` over the committed comparison files: every rule kept, every green
    reproduction row listed with its null, margin, window share and sibling."""
    assert compare.main(["--audit"]) == 0, capsys.readouterr().out[-3000:]
    out = capsys.readouterr().out
    assert "every committed file keeps every rule" in out and "== venkatesha2025:" in out
