"""The paper manifest (specedge.papers): the committed one drives the runner, the coverage tool and the README's
tables; a wrong one is refused before anything runs, with its file and key named."""
import copy
import re

import pytest
import yaml

from specedge import coverage, needs, notebooks, papers, paths

GOOD = {
    "p1": {"title": "Paper one", "arxiv": "2509.04576",
           "notebooks": {"p1_main": {"folder": "p1", "summary": "the first", "expected_s": 10,
                                     "inventory": "inv/p1.yaml",
                                     "needs": {"runtime": {"verify": "linear_batch"}, "links": ["up"]}},
                         "p1_serving": {"folder": "p1_serving", "summary": "its serving side", "expected_s": 30}}},
    "arena": {"title": "Beyond", "arxiv": None,
              "notebooks": {"arena_nb": {"folder": "arena", "summary": "all of them", "expected_s": 5,
                                         "reads": ["p1_serving"]}}},
}


def _load(tmp_path, table=GOOD, text: str | None = None) -> papers.Manifest:
    (tmp_path / "nb").mkdir(exist_ok=True)
    for nb in ("p1_main", "p1_serving", "arena_nb"):
        (tmp_path / "nb" / f"{nb}.ipynb").write_text("{}")
    (tmp_path / "inv").mkdir(exist_ok=True)
    (tmp_path / "inv" / "p1.yaml").write_text("paper: p1\n")
    path = tmp_path / "papers.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(table, sort_keys=False, allow_unicode=True))
    return papers.load(path, root=tmp_path, notebooks_dir=tmp_path / "nb")


def _edited(edit) -> dict:
    table = copy.deepcopy(GOOD)
    edit(table)
    return table


def test_a_good_manifest_loads_in_its_order_with_folders_reads_and_inventories(tmp_path):
    m = _load(tmp_path)
    assert list(m.papers) == ["p1", "arena"] and m.papers["p1"].notebooks == ("p1_main", "p1_serving")
    assert list(m.folders) == ["p1", "p1_serving", "arena"]
    assert m.expected_s == {"p1_main": 10, "p1_serving": 30, "arena_nb": 5}
    assert m.reads == {"arena_nb": ("p1_serving",)}                  # folders read -> the notebooks that write them
    assert m.inventories == {"p1": tmp_path / "inv" / "p1.yaml"}
    assert m.notebooks["p1_main"].needs == {"runtime": {"verify": "linear_batch"}, "links": ("up",),
                                            "constants": (), "optional_constants": ()}
    assert m.notebooks["p1_serving"].needs is None                   # no `profile` parameter: no needs
    assert m.select("p1") == ["p1_main", "p1_serving"]               # a paper's key: all its notebooks
    assert m.select("p1_serving") == ["p1_serving"]                  # an output folder's key: its notebook
    assert m.select("arena") == ["arena_nb"] and m.select("p1_main") == ["p1_main"] and m.select("p") == []
    assert m.readme_table().splitlines() == [
        "| key | paper | notebook |", "|---|---|---|",
        "| `p1` | the first (arXiv 2509.04576) | `notebooks/p1_main.ipynb` |",
        "| `p1` | its serving side (arXiv 2509.04576) | `notebooks/p1_serving.ipynb` |",
        "| `arena` | all of them | `notebooks/arena_nb.ipynb` |"]


@pytest.mark.parametrize("edit, key, expected", [
    (lambda t: t["p1"].pop("title"), "p1.title", "a value (the key is missing)"),
    (lambda t: t["p1"]["notebooks"]["p1_main"].pop("folder"), "p1.notebooks.p1_main.folder", "a value"),
    (lambda t: t["p1"]["notebooks"]["p1_main"].pop("expected_s"), "p1.notebooks.p1_main.expected_s", "a value"),
    (lambda t: t["p1"].update(titel="x"), "p1.titel", "one of the keys title, arxiv, notebooks"),
    (lambda t: t["p1"]["notebooks"]["p1_main"].update(expected_s="long"), "p1.notebooks.p1_main.expected_s",
     "a number of seconds > 0, got 'long'"),
    (lambda t: t["p1"]["notebooks"]["p1_main"].update(expected_s=True), "p1.notebooks.p1_main.expected_s",
     "a number of seconds > 0, got True"),
    (lambda t: t["p1"]["notebooks"]["p1_main"].update(expected_s=0), "p1.notebooks.p1_main.expected_s", "> 0"),
    (lambda t: t["p1"].update(arxiv=2509.04576), "p1.arxiv", "an arXiv id such as '2509.04576' (quoted) or null"),
    (lambda t: t["p1"].update(title=""), "p1.title", "a non-empty string"),
    (lambda t: t["p1"].update(notebooks={}), "p1.notebooks", "a non-empty mapping"),
    (lambda t: t["p1"]["notebooks"]["p1_main"].update(reads="p1_serving"), "p1.notebooks.p1_main.reads",
     "a list of names"),
    (lambda t: t["p1"]["notebooks"]["p1_main"]["needs"].update(runtime=["verify"]),
     "p1.notebooks.p1_main.needs.runtime", "a mapping of runtime model -> kind"),
    (lambda t: t["p1"]["notebooks"]["p1_main"]["needs"].update(link=["up"]), "p1.notebooks.p1_main.needs.link",
     "one of the keys runtime, links"),
    (lambda t: t["p1"]["notebooks"]["p1_main"].update(inventory="inv/none.yaml"), "p1.notebooks.p1_main.inventory",
     "a file"),
    (lambda t: t["p1"]["notebooks"].update(p1_gone={"folder": "g", "summary": "s", "expected_s": 1}),
     "p1.notebooks.p1_gone", "p1_gone.ipynb (the file is missing)"),
    (lambda t: t["arena"]["notebooks"]["arena_nb"].update(folder="p1_serving"), "arena.notebooks.arena_nb.folder",
     "an output folder of its own (p1.notebooks.p1_serving writes to it too)"),
    (lambda t: t["arena"]["notebooks"].update(p1_main=t["arena"]["notebooks"].pop("arena_nb")),
     "arena.notebooks.p1_main", "a notebook named once (paper p1 names it too)"),
    (lambda t: t["arena"]["notebooks"]["arena_nb"].update(reads=["p2"]), "arena.notebooks.arena_nb.reads",
     "output folders of other notebooks (p1, p1_serving), got 'p2'"),
    (lambda t: t["arena"]["notebooks"]["arena_nb"].update(reads=["arena"]), "arena.notebooks.arena_nb.reads",
     "got 'arena'"),
    (lambda t: (t["p1"]["notebooks"]["p1_main"].update(reads=["arena"]),
                t["arena"]["notebooks"]["arena_nb"].update(reads=["p1_serving", "p1"])),
     "p1.notebooks.p1_main.reads, arena.notebooks.arena_nb.reads", "no circle"),
    (lambda t: t.update(P2=t["arena"]), "P2", "a paper's key"),
])
def test_a_wrong_manifest_is_refused_with_its_file_and_key(tmp_path, edit, key, expected):
    with pytest.raises(papers.ManifestError) as err:
        _load(tmp_path, _edited(edit))
    assert str(err.value).startswith(f"{tmp_path / 'papers.yaml'}: key '{key}': expected "), str(err.value)
    assert expected in str(err.value)


def test_a_key_written_twice_is_refused_not_silently_overwritten(tmp_path):
    text = yaml.safe_dump(GOOD, sort_keys=False)
    twice = text.replace("  notebooks:\n    arena_nb:", "  notebooks:\n    arena_nb:\n      folder: a2\n"
                         "      summary: s\n      expected_s: 1\n    arena_nb:", 1)
    with pytest.raises(papers.ManifestError, match=re.escape(f"{tmp_path / 'papers.yaml'}: key 'arena_nb' (line ")
                       + r"\d+\) is written twice"):
        _load(tmp_path, text=twice)
    with pytest.raises(papers.ManifestError, match="is missing: the paper manifest is committed"):
        papers.load(tmp_path / "none.yaml")


def test_an_unknown_runtime_kind_is_refused_by_needs_with_the_manifest_key(tmp_path):
    m = _load(tmp_path, _edited(lambda t: t["p1"]["notebooks"]["p1_main"]["needs"]["runtime"].update(verify="lin")))
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'papers.yaml'}: key "
                                                   "'p1.notebooks.p1_main.needs.runtime.verify': expected one of")):
        needs._load_needs(m)
    assert set(needs._load_needs(_load(tmp_path))) == {"p1_main"}


def test_the_committed_manifest_names_every_notebook_folder_and_inventory():
    m = papers.MANIFEST
    assert set(m.notebooks) == {nb.stem for nb in paths.NOTEBOOKS.glob("*.ipynb")}
    assert set(m.inventories) == {p.stem for p in (paths.DATA / "coverage").glob("*.yaml")}
    assert {f for f in m.folders} <= {p.name for p in paths.FIGURES.iterdir() if p.is_dir()}
    assert set(needs.NEEDS) == {n for n, nb in m.notebooks.items() if nb.needs is not None}
    assert {coverage.load_inventory(k)["paper"] for k in m.inventories} == set(m.inventories)


def test_an_output_folders_key_selects_its_notebook_in_the_runner():
    """`make figures NB=li2026_serving` runs the notebook that writes figures/li2026_serving/; the paper's key runs
    both of its notebooks; a notebook's exact name and a prefix keep selecting as before."""
    def stems(*names):
        return [nb.stem for nb in notebooks.notebooks(list(names))]

    assert stems("li2026_serving") == ["li2026_wisp_serving"]
    assert stems("li2026") == ["li2026_wisp", "li2026_wisp_serving"]
    assert stems("li2026_wisp") == ["li2026_wisp"]
    assert stems("model_zoo") == ["model_zoo_card"] and stems("zheng") == ["zheng2025_tk_slt"]
    with pytest.raises(ValueError, match=r"no notebook matches \['li2026_srv'\]"):
        notebooks.notebooks(["li2026_srv"])
