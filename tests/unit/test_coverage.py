"""Coverage counting: inventories load and validate; rows are counted per artefact and capped."""
import numpy as np
import pandas as pd
import pytest

from specedge import coverage, papers, paths


def _rows(*labels):
    return pd.DataFrame({"artifact": list(labels)})


INV = {"paper": "zheng2025", "artifacts": [
    dict(name="Table I", stated=3, counted="", rows=["Table I"], side=""),
    dict(name="Fig 7", stated=2, counted="", rows=["Fig 7", "Fig 7a"], side="drafting"),
    dict(name="Fig 9", stated=1, counted="", rows=["Fig 9"], side="serving")]}


def test_count_caps_each_artefact_and_reports_extra_rows():
    t = coverage.count(INV, _rows("Table I", "Fig 7a", "Fig 7", "Fig 7a", "Algorithm 1"))
    by = t.set_index("artifact")
    assert by.loc["Table I", "rows"] == 1 and by.loc["Table I", "covered"] == 1
    assert by.loc["Fig 7", "rows"] == 3 and by.loc["Fig 7", "covered"] == 2  # capped at stated
    assert by.loc["Fig 9", "covered"] == 0
    assert by.loc["(beyond the paper)", "rows"] == 1 and by.loc["(beyond the paper)", "covered"] == 0
    s = coverage.summary(t)
    assert (s["stated"], s["covered"]) == (6, 3) and s["percent"] == pytest.approx(50.0)
    assert coverage.summary(t, "drafting")["percent"] == pytest.approx(100.0)
    assert coverage.summary(t, "serving")["covered"] == 0


@pytest.mark.parametrize("key", papers.MANIFEST.inventories)
def test_committed_inventories_agree_with_the_committed_tables(key):
    """Statement inventories: every statement held by a row, an input or a
    test, and every row names a statement the inventory lists. Older artefact counts: counted, capped."""
    inv = coverage.load_inventory(key)
    comp = coverage.load_comparison(key)
    if "statements" in inv:
        c = coverage.check_statements(inv, comp)
        assert c == dict(unheld=[], unlabelled=[], unknown=[], missing_tests=[]), c
        return
    assert inv["artifacts"] and all(a["stated"] >= 0 for a in inv["artifacts"])
    t = coverage.count(inv, comp)
    assert (t.covered <= t.stated).all() and (t.covered <= t.rows).all()


STATEMENTS = """paper: zhu2025
source: x
statements:
  - {id: a, where: Fig 1, text: "A is 31.3%"}
  - {id: b, where: Fig 2, text: "B grows"}
  - {id: c, where: Table II, text: "K 100", input: profile}
  - {id: d, where: Sec III, text: "optimal", test: "tests/unit/test_coverage.py::test_check_statements_reports_each_disagreement"}
beyond: [extra]
"""


def test_check_statements_reports_each_disagreement(tmp_path):
    (tmp_path / "zhu2025.yaml").write_text(STATEMENTS)
    inv = coverage.load_inventory("zhu2025", root=tmp_path)
    rows = pd.DataFrame({"artifact": ["Fig 1", "Fig 2", "Fig 3", "Alg"], "quantity": ["q1", "q2", "q3", "q4"],
                         "statements": ["a", "", "zz", "extra"]})
    c = coverage.check_statements(inv, rows)
    assert c["unheld"] == ["b"]                       # b has no row; c is an input, d a test
    assert c["unlabelled"] == ["Fig 2 / q2"] and c["unknown"] == ["zz"] and c["missing_tests"] == []
    ok = rows.assign(statements=["a", "b", "a", "extra"])
    assert coverage.check_statements(inv, ok) == dict(unheld=[], unlabelled=[], unknown=[], missing_tests=[])
    t = coverage.statement_table(inv, ok).set_index("id")
    assert list(t.held_by) == ["reproduction", "reproduction", "input", "test"] and t.loc["a", "rows"] == 2
    kinds = ok.assign(kind=["reproduction", "setting", "analytic", "setting"])
    assert list(coverage.statement_table(inv, kinds).held_by) == ["reproduction", "setting", "input", "test"]
    (tmp_path / "zhu2025.yaml").write_text(STATEMENTS.replace("test_check_statements_reports", "test_nope"))
    bad = coverage.check_statements(coverage.load_inventory("zhu2025", root=tmp_path), ok)
    assert bad["missing_tests"] and bad["missing_tests"][0].startswith("d:")
    (tmp_path / "zhu2025.yaml").write_text(STATEMENTS.replace("{id: b,", "{id: a,"))
    with pytest.raises(ValueError, match="unique"):
        coverage.load_inventory("zhu2025", root=tmp_path)
    (tmp_path / "zhu2025.yaml").write_text(STATEMENTS.replace('text: "B grows"', 'text: ""'))
    with pytest.raises(ValueError, match="quotes the paper"):
        coverage.load_inventory("zhu2025", root=tmp_path)


def test_li2026_reports_drafting_and_serving_sides():
    """li2026's serving notebook has its own inventory (li2026_serving): its rows are counted there, not
    against the drafting side's inventory."""
    assert "li2026_serving" in papers.MANIFEST.inventories
    drafting, serving = coverage.load_comparison("li2026"), coverage.load_comparison("li2026_serving")
    assert {"Table 2", "Table 7", "Table 6"} <= set(serving.artifact)
    assert not {"Table 2", "Table 7", "Table 6"} & set(drafting.artifact)
    assert "Validation" not in set(serving.artifact)   # ours against ours: checks.csv, never a comparison row
    lines = coverage.report(["li2026", "li2026_serving"]).set_index("paper")
    assert lines.loc["li2026_serving", "inventory"] == "statements"


def test_a_further_notebook_with_its_own_inventory_is_not_counted_twice(tmp_path):
    for folder, label in (("li2026", "Table 4"), ("li2026_serving", "Table 2"), ("li2026_extra", "Fig 1")):
        (tmp_path / folder).mkdir()
        pd.DataFrame({"artifact": [label], "quantity": ["q"]}).to_csv(tmp_path / folder / "comparison.csv", index=False)
    assert sorted(coverage.load_comparison("li2026", figures=tmp_path).artifact) == ["Fig 1", "Table 4"]
    assert list(coverage.load_comparison("li2026_serving", figures=tmp_path).artifact) == ["Table 2"]


def test_missing_and_malformed_inventories_raise(tmp_path):
    with pytest.raises(ValueError, match="key must be one of"):
        coverage.load_inventory("nope")
    with pytest.raises(FileNotFoundError, match="zhu2025.yaml"):
        coverage.load_inventory("zhu2025", root=tmp_path)
    (tmp_path / "zhu2025.yaml").write_text("paper: zhu2025\nartifacts:\n  - name: Fig 6\n    stated: -1\n    counted: x\n")
    with pytest.raises(ValueError, match="'stated' must be an integer"):
        coverage.load_inventory("zhu2025", root=tmp_path)
    (tmp_path / "zhu2025.yaml").write_text("paper: zhu2025\nartifacts:\n  - name: Fig 6\n    stated: 1\n")
    with pytest.raises(ValueError, match="expected keys name, stated, counted"):
        coverage.load_inventory("zhu2025", root=tmp_path)
    (tmp_path / "zhu2025.yaml").write_text(
        "paper: zhu2025\nartifacts:\n  - {name: Fig 6, stated: 1, counted: x}\n  - {name: B, stated: 1, counted: x, rows: [Fig 6]}\n")
    with pytest.raises(ValueError, match="listed twice"):
        coverage.load_inventory("zhu2025", root=tmp_path)


def test_missing_comparison_names_the_make_target(tmp_path):
    with pytest.raises(FileNotFoundError, match="make figures"):
        coverage.load_comparison("zhu2025", figures=tmp_path)


def test_paper_values_come_from_the_inventory_by_statement_id(tmp_path):
    (tmp_path / "zhu2025.yaml").write_text(STATEMENTS.replace('text: "A is 31.3%"}', 'text: "A is 31.3%", paper: 31.3}'))
    assert coverage.paper_values("zhu2025", root=tmp_path) == {"a": 31.3}
    (tmp_path / "zhu2025.yaml").write_text(STATEMENTS.replace('text: "A is 31.3%"}', 'text: "A is 31.3%", value: 31.3}'))
    with pytest.raises(ValueError, match="optional input, test, side, paper"):
        coverage.paper_values("zhu2025", root=tmp_path)


def test_paper_range_reads_low_high():
    assert coverage.paper_range("5-25") == (5.0, 25.0) and coverage.paper_range("20.5-30.0") == (20.5, 30.0)
    for bad in ("25-5", "5", "a-b", 5):
        with pytest.raises(ValueError, match="low-high"):
            coverage.paper_range(bad)


def _code(notebook: str) -> str:
    import json
    cells = json.loads((paths.ROOT / "notebooks" / notebook).read_text())["cells"]
    return "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


@pytest.mark.parametrize("key, notebook", [("tran2025", "tran2025_goodspeed.ipynb"), ("li2026_serving", "li2026_wisp_serving.ipynb"),
                                           ("model_zoo", "model_zoo_card.ipynb"), ("zheng2025", "zheng2025_tk_slt.ipynb"),
                                           ("zhu2025", "zhu2025_edge_sd.ipynb"), ("li2026", "li2026_wisp.ipynb"),
                                           ("venkatesha2025", "venkatesha2025_early_exit.ipynb")])
def test_notebook_types_no_paper_value_of_its_inventory(key, notebook):
    """The paper's numbers are data: no value an inventory states (a number of three significant
    digits or more, a range, a list) appears typed in its notebook's code (statement ids, which may carry a
    value in their name, are left out); shorter numbers (50, 400, 0.1, ...) are too common to check."""
    code = _code(notebook)
    values = coverage.paper_values(key)
    for sid in sorted(values, key=len, reverse=True):
        code = code.replace(f'"{sid}"', '""').replace(f"'{sid}'", "''")
    typed = []
    for sid, v in values.items():
        digits = str(v).replace("-", "").replace(".", "").strip("0")
        forms = [v] if isinstance(v, str) and ("-" in v or "," in v) else \
                [repr(v), f"{v:g}"] if isinstance(v, (int, float)) and len(digits) >= 3 else []
        typed += [f"{sid}: {f}" for f in dict.fromkeys(forms) if f in code]
    assert not typed, f"{notebook} types paper values of data/coverage/{key}.yaml: {typed}; read them from coverage.paper_values"


def test_zheng2025_notebook_types_no_paper_number():
    """The paper's numbers are data: the zheng2025 notebook reads them from its inventory."""
    import json
    code = "".join("".join(c["source"]) for c in json.loads((paths.ROOT / "notebooks" / "zheng2025_tk_slt.ipynb")
                                                             .read_text())["cells"] if c["cell_type"] == "code")
    for typed in ("0.0702", "0.0723", '["4", "2", "1", "1"', "(3 2 2 1 1)"):
        assert typed not in code, f"the zheng2025 notebook types the paper's {typed!r}: read it from coverage.paper_values"
    assert set(coverage.paper_values("zheng2025")) >= {"table2-L-K3", "table1-a0.8-L0.01", "fig4-best-320"}


def test_report_counts_only_statements_with_a_reproduction_or_analytic_row(tmp_path):
    """A statement held only by a setting, an input or a test is not covered: coverage counts what could have
    come out otherwise."""
    (tmp_path / "zhu2025.yaml").write_text(STATEMENTS)
    (tmp_path / "zhu2025").mkdir()
    pd.DataFrame({"artifact": ["Fig 1", "Fig 2"], "quantity": ["q1", "q2"], "kind": ["analytic", "setting"],
                  "statements": ["a", "b"]}).to_csv(tmp_path / "zhu2025" / "comparison.csv", index=False)
    line = coverage.report(["zhu2025"], root=tmp_path, figures=tmp_path).iloc[0]
    assert (line.stated, line.covered, line.settings_inputs, line.tests) == (4, 1, 2, 1)
    assert line.percent == pytest.approx(25.0)


def test_a_statement_says_where_its_value_comes_from(tmp_path):
    """``source``: stated (default), recovered from the paper's formulas, or read off a figure; anything else is refused."""
    (tmp_path / "zhu2025.yaml").write_text(STATEMENTS.replace('text: "A is 31.3%"}', 'text: "A is 31.3%", source: recovered}'))
    assert set(coverage.paper_sources("zhu2025", root=tmp_path).values()) == {"stated", "recovered"}
    assert coverage.paper_sources("zhu2025", root=tmp_path)["a"] == "recovered"
    (tmp_path / "zhu2025.yaml").write_text(STATEMENTS.replace('text: "A is 31.3%"}', 'text: "A is 31.3%", source: guessed}'))
    with pytest.raises(ValueError, match="'source' must be one of"):
        coverage.paper_sources("zhu2025", root=tmp_path)
    # zheng2025's Table I cells and its cost estimates are recovered: 13 numeric cells and one input
    src = coverage.paper_sources("zheng2025")
    assert sum(v == "recovered" and k.startswith("table1-") for k, v in src.items()) == 13
    assert src["sec6b-cost-estimates"] == "recovered" and src["table1-a0.4-L0.6"] == "stated"


# --------------------------------------------------------------------------- edge cases of the inventories and the report
ARTEFACTS = """paper: li2026
artifacts:
  - {name: Table 4, stated: 2, counted: "two cells", side: drafting}
  - {name: Table 6, stated: 3, counted: "three cells", rows: [Table 6, Table 6b], side: serving}
  - {name: Fig 1, stated: 0, counted: "a sketch"}
"""


def test_report_on_an_artefact_count_gives_a_line_per_side_with_hand_counted_percentages(tmp_path, capsys):
    """Table 4: 3 rows against 2 stated (capped: 2 of 2); Table 6: 1 + 1 rows over its two labels against 3 stated
    (2 of 3); Fig 1 states nothing; an 'Alg' row is beyond the paper. All: 4 of 5 = 80 %; drafting 100 %; serving
    2 of 3."""
    (tmp_path / "li2026.yaml").write_text(ARTEFACTS)
    (tmp_path / "li2026").mkdir()
    pd.DataFrame({"artifact": ["Table 4"] * 3 + ["Table 6", "Table 6b", "Alg"], "quantity": list("abcdef")}).to_csv(
        tmp_path / "li2026" / "comparison.csv", index=False)
    lines = coverage.report(["li2026"], root=tmp_path, figures=tmp_path, detail=True).set_index("side")
    assert list(lines.index) == ["all", "drafting", "serving"] and (lines.inventory == "artefact counts").all()
    assert lines.loc["all", ["stated", "covered"]].tolist() == [5, 4] and lines.loc["all", "percent"] == pytest.approx(80.0)
    assert lines.loc["drafting", "percent"] == pytest.approx(100.0)
    assert lines.loc["serving", "percent"] == pytest.approx(200 / 3) and lines.unlabelled_rows.isna().all()
    out = capsys.readouterr().out
    assert "li2026" in out and "(beyond the paper)" in out and "Table 6" in out      # the per-artefact table
    inv = coverage.load_inventory("li2026", root=tmp_path)
    assert [a["rows"] for a in inv["artifacts"]] == [["Table 4"], ["Table 6", "Table 6b"], ["Fig 1"]]
    assert [a["side"] for a in inv["artifacts"]] == ["drafting", "serving", ""]
    with pytest.raises(ValueError, match="an artefact count, not a statement inventory"):
        coverage.paper_values("li2026", root=tmp_path)
    assert coverage.paper_sources("li2026", root=tmp_path) == {}


def test_a_side_without_statements_has_no_percentage_and_no_rows_count_zero():
    t = coverage.count(INV, _rows())
    assert t.rows.tolist() == [0, 0, 0, 0] and t.covered.sum() == 0
    assert np.isnan(coverage.summary(t, "no such side")["percent"])
    assert coverage.summary(t)["percent"] == 0.0


def test_row_statements_reads_ids_and_treats_a_missing_column_as_none():
    assert coverage.row_statements(pd.DataFrame({"artifact": ["a", "b"]})) == [[], []]
    rows = pd.DataFrame({"statements": ["x  y", None, ""]})
    assert coverage.row_statements(rows) == [["x", "y"], [], []]


def test_statement_table_prefers_a_covering_row_over_a_setting_and_names_rows_without_kind():
    inv = {"statements": [dict(id="a", where="w", text="t", side=""), dict(id="b", where="w", text="t", side=""),
                          dict(id="c", where="w", text="t", side="")]}
    rows = pd.DataFrame({"statements": ["a", "a b", "b"], "kind": ["setting", "analytic", "check"]})
    t = coverage.statement_table(inv, rows).set_index("id")
    # a: a setting and an analytic row -> analytic (covered); b: an analytic row among others; c: no row at all
    assert t.held_by.to_dict() == {"a": "analytic", "b": "analytic", "c": "NONE"}
    assert t.rows.to_dict() == {"a": 2, "b": 2, "c": 0}
    only_other = pd.DataFrame({"statements": ["a"], "kind": ["check"]})
    assert coverage.statement_table(inv, only_other).set_index("id").held_by["a"] == "rows"   # named, by no counted kind


@pytest.mark.parametrize("text, match", [
    ("paper: zhu2025\nstatements: []\n", "'statements' must be a non-empty list"),
    ("paper: zhu2025\nstatements:\n  - {id: a, where: w, text: t, input: x, test: y}\n", "an input or held by a test, not both"),
    ("paper: zhu2025\nstatements:\n  - {id: a b, where: w, text: t}\n", "must be unique and contain no spaces"),
    ("paper: zhu2025\nstatements:\n  - {id: a, where: ' ', text: t}\n", "'where' names its place"),
    ("paper: zhu2025\nstatements:\n  - {id: a, where: w, text: t}\nbeyond: [a]\n", "'beyond' must list ids"),
    ("paper: zhu2025\nstatements:\n  - {id: a, where: w, text: t}\nbeyond: x\n", "'beyond' must list ids"),
    ("paper: zhu2025\nstatements:\n  - just a string\n", "expected keys id, where, text"),
    ("paper: tran2025\nartifacts: []\n", "expected a mapping with 'paper: zhu2025'"),
    ("- a list\n", "expected a mapping with 'paper: zhu2025'"),
    ("paper: zhu2025\nartifacts:\n  - {name: A, stated: true, counted: x}\n", "'stated' must be an integer"),
    ("paper: zhu2025\nartifacts:\n  - {name: A, stated: 1.0, counted: x}\n", "'stated' must be an integer"),
    ("paper: zhu2025\nartifacts:\n  - {name: A, stated: 1, counted: x, rows: []}\n", "'rows' must be a non-empty list"),
    ("paper: zhu2025\nartifacts:\n  - {name: A, stated: 1, counted: x, colour: red}\n", "expected keys name, stated"),
])
def test_a_malformed_inventory_is_refused_naming_its_file(tmp_path, text, match):
    (tmp_path / "zhu2025.yaml").write_text(text)
    with pytest.raises(ValueError, match=match) as err:
        coverage.load_inventory("zhu2025", root=tmp_path)
    assert "zhu2025.yaml" in str(err.value)


def test_zero_stated_is_allowed_and_a_statement_with_a_test_needs_a_name_after_the_colons(tmp_path):
    (tmp_path / "zhu2025.yaml").write_text("paper: zhu2025\nartifacts:\n  - {name: A, stated: 0, counted: x}\n")
    assert coverage.load_inventory("zhu2025", root=tmp_path)["artifacts"][0]["stated"] == 0
    inv = {"statements": [dict(id="d", where="w", text="t", test="tests/unit/test_coverage.py", side="")], "beyond": []}
    rows = pd.DataFrame({"artifact": ["x"], "quantity": ["q"], "statements": ["d"]})
    assert coverage.check_statements(inv, rows)["missing_tests"] == ["d: tests/unit/test_coverage.py"]


def test_main_prints_the_table_and_refuses_an_unknown_paper(capsys):
    assert coverage.main(["zhu2025"]) == 0
    out = capsys.readouterr().out
    assert "zhu2025" in out and "statements" in out and " %" in out
    with pytest.raises(SystemExit) as err:
        coverage.main(["zhu2025", "nope"])
    assert err.value.code == 2 and "unknown paper 'nope'" in capsys.readouterr().err
