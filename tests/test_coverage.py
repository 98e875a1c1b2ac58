"""Coverage counting: inventories load and validate; rows are counted per artefact and capped."""
import pandas as pd
import pytest

from specedge import coverage, paths


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


@pytest.mark.parametrize("key", coverage.PAPERS)
def test_committed_inventories_agree_with_the_committed_tables(key):
    """Statement inventories (papers re-read for issue 19): every statement held by a row, an input or a
    test, and every row names a statement the inventory lists. Older artefact counts: counted, capped."""
    for stem, inv, comp in coverage.held_parts(key):
        if "statements" in inv:
            c = coverage.check_statements(inv, comp)
            assert c == dict(unheld=[], unlabelled=[], unknown=[], missing_tests=[]), (stem, c)
            continue
        assert inv["artifacts"] and all(a["stated"] >= 0 for a in inv["artifacts"])
        t = coverage.count(inv, comp)
        assert (t.covered <= t.stated).all() and (t.covered <= t.rows).all()


STATEMENTS = """paper: zhu2025
source: x
statements:
  - {id: a, where: Fig 1, text: "A is 31.3%"}
  - {id: b, where: Fig 2, text: "B grows"}
  - {id: c, where: Table II, text: "K 100", input: profile}
  - {id: d, where: Sec III, text: "optimal", test: "tests/test_coverage.py::test_check_statements_reports_each_disagreement"}
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
    assert list(t.held_by) == ["rows", "rows", "input", "test"] and t.loc["a", "rows"] == 2
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
    """li2026's inventory has two parts, each held by its own notebook's rows: the drafting side
    (li2026.yaml, figures/li2026/) and the serving side (li2026_serving.yaml, figures/li2026_serving/)."""
    assert coverage.parts("li2026") == ["li2026", "li2026_serving"]
    lines = coverage.report(["li2026"]).set_index("side")
    assert set(lines.index) == {"drafting", "serving"}
    dr = lines.loc["drafting"]
    assert dr.inventory == "statements" and dr.covered == dr.stated and dr.unlabelled_rows == 0
    drafting_rows = coverage.load_comparison("li2026", part="li2026")
    assert len(drafting_rows) < len(coverage.load_comparison("li2026"))   # the serving rows are not the drafting part's


def test_parts_hold_their_own_folders(tmp_path):
    """Two inventory parts: each is checked against its own figures folder, never the other's rows."""
    inv, fig = tmp_path / "inv", tmp_path / "fig"
    inv.mkdir()
    (inv / "li2026.yaml").write_text(STATEMENTS.replace("zhu2025", "li2026").replace("source: x", "side: drafting\nsource: x"))
    (inv / "li2026_serving.yaml").write_text("paper: li2026\nside: serving\nsource: x\nstatements:\n"
                                             "  - {id: s1, where: Table 3, text: 'goodput 631.86'}\n")
    for stem, ids in (("li2026", ["a", "b", "extra"]), ("li2026_serving", ["s1"])):
        (fig / stem).mkdir(parents=True)
        pd.DataFrame({"artifact": ["T"] * len(ids), "quantity": ids, "statements": ids}).to_csv(fig / stem / "comparison.csv", index=False)
    got = {stem: coverage.check_statements(i, c) for stem, i, c in coverage.held_parts("li2026", inv, fig)}
    assert got == {s: dict(unheld=[], unlabelled=[], unknown=[], missing_tests=[]) for s in ("li2026", "li2026_serving")}
    assert coverage.load_inventory("li2026", inv, "li2026_serving")["statements"][0]["side"] == "serving"
    with pytest.raises(ValueError, match="part must be"):
        coverage.load_inventory("li2026", inv, "zhu2025")
    (inv / "li2026_serving.yaml").write_text("paper: li2026\nsides: serving\nstatements:\n  - {id: s1, where: T, text: x}\n")
    with pytest.raises(ValueError, match="unknown top-level"):
        coverage.load_inventory("li2026", inv, "li2026_serving")


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


def test_zheng2025_notebook_types_no_paper_number():
    """The paper's numbers are data (issue 19): the zheng2025 notebook reads them from its inventory."""
    import json
    code = "".join("".join(c["source"]) for c in json.loads((paths.ROOT / "notebooks" / "zheng2025_tk_slt.ipynb")
                                                             .read_text())["cells"] if c["cell_type"] == "code")
    for typed in ("0.0702", "0.0723", '["4", "2", "1", "1"', "(3 2 2 1 1)"):
        assert typed not in code, f"the zheng2025 notebook types the paper's {typed!r}: read it from coverage.paper_values"
    assert set(coverage.paper_values("zheng2025")) >= {"table2-L-K3", "table1-a0.8-L0.01", "fig4-best-320"}


def _code(notebook: str) -> str:
    import json
    cells = json.loads((paths.ROOT / "notebooks" / notebook).read_text())["cells"]
    return "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


@pytest.mark.parametrize("notebook, key, typed, ids", [
    ("li2026_wisp.ipynb", "li2026",
     ("0.7510", "0.7727", "0.4250", "17510", "73.22", "26.78", "0.3484", "114.4152", "(0.31, 0.48)", "54.0", "44.7",
      "57.50", "0.93-0.94", "723-724", "160/563"),
     {"table4-mlp", "table10-xgboost", "table5-on", "table11-rpi4b-mlp", "table8-negative"}),
    ("venkatesha2025_early_exit.ipynb", "venkatesha2025",
     ("0.69, 1.04", "65.61", "79.85", "27.57", "17.94", "258.79", "7.76", "101e6", "1600, 117", "2.92", "0.5563",
      "12.4", "(33, 50)", "1.16x"),
     {"table6-average-fsd", "table7-fifo-fifo", "table9-client", "table2-qwen2vl-7b", "table1-groq-llama3"}),
])
def test_notebook_types_no_paper_number(notebook, key, typed, ids):
    """The paper's numbers are data (issue 19): the notebook reads them from its inventory."""
    code = _code(notebook)
    for t in typed:
        assert t not in code, f"{notebook} types the paper's {t!r}: read it from coverage.paper_values({key!r})"
    assert set(coverage.paper_values(key)) >= ids
