"""The zoo's corpus (``zoo.corpus``): each source's records from hand-made inputs, the generated domains' worked
answers and SQL checked independently, and assembly, freezing and loading on a small corpus."""
import hashlib
import random
import re
import sqlite3
import textwrap

import pytest

from specedge.zoo import corpus


def test_is_eval_holds_out_below_the_fraction_and_not_at_it():
    key = "mod:json"
    h = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    assert corpus._is_eval(key, h) is False                 # exactly at the fraction: not held out
    assert corpus._is_eval(key, h + 1e-9) is True
    assert corpus._is_eval(key, 0.0) is False
    assert corpus._is_eval(key, h) == corpus._is_eval(key, h)


def test_sentences_split_after_a_stop_before_a_capital_and_collapse_whitespace():
    text = "Hello world.  It is\n here! ok? Yes. `x` works. (A) too"
    assert corpus._sentences(text) == ["Hello world.", "It is here! ok?", "Yes.", "`x` works.", "(A) too"]
    assert corpus._sentences("   ") == []


def test_chunks_join_paragraphs_up_to_the_size_not_counting_the_separator():
    text = "aaaa\n\nbbbb\n\n  \n\ncc"
    assert corpus._chunks(text, 8) == ["aaaa\n\nbbbb", "cc"]           # 4 + 4 = 8 is not over 8
    assert corpus._chunks(text, 7) == ["aaaa", "bbbb\n\ncc"]                  # 4 + 4 > 7; then 4 + 2 fits
    assert corpus._chunks(text, 100) == ["aaaa\n\nbbbb\n\ncc"]
    assert corpus._chunks("", 10) == []


LONG_DOC = ("Return the area of a rectangle of the given width and height. The result is in square units. "
            "Negative sizes are refused with an error. Zero is allowed. It never rounds. The end.")
FUNC = textwrap.indent(textwrap.dedent(f'''\
    def area(width, height):
        """{LONG_DOC}"""
        result = width * height
        if result < 0:
            raise ValueError("negative area")
        return result
    '''), "    ")


def _stdlib(tmp_path):
    root = tmp_path / "lib"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text('"""The package."""\n')
    (root / "pkg" / "mod.py").write_text(textwrap.dedent('''\
        """A module."""
        def public():
            """Public function."""
        def _private():
            """Private."""
        def nodoc():
            pass
        class K:
            """A class."""
            x = 1
            def method(self):
                """A method."""
            def _hidden(self):
                """Hidden."""
        '''))
    (root / "tests").mkdir()
    (root / "tests" / "a.py").write_text('"""Skipped: a test folder."""\n')
    (root / "test_b.py").write_text('"""Skipped: a test module."""\n')
    (root / "bad.py").write_text('"""Not Python."""\ndef (:\n')
    return root


def test_stdlib_items_are_the_documented_public_defs_of_the_files_outside_tests(tmp_path):
    root = _stdlib(tmp_path)
    assert [p.relative_to(root).as_posix() for p in corpus._stdlib_files(root)] == ["bad.py", "pkg/__init__.py", "pkg/mod.py"]
    items = list(corpus._stdlib_items(root))
    assert [(m, q, k, d) for m, q, k, d, _ in items] == [
        ("pkg", "pkg", "module", "The package."), ("pkg.mod", "pkg.mod", "module", "A module."),
        ("pkg.mod", "pkg.mod.public", "function", "Public function."), ("pkg.mod", "pkg.mod.K", "class", "A class."),
        ("pkg.mod", "pkg.mod.K.method", "function", "A method.")]
    assert items[0][4] is None and items[2][4].startswith("def public():")
    assert corpus._module_name(root / "pkg" / "__init__.py", root) == "pkg"


def test_code_records_split_a_function_after_its_docstring():
    item = ("geo", "geo.area", "function", LONG_DOC, FUNC)
    (key, prompt, body), = corpus._code([item])
    src = textwrap.dedent(FUNC)
    assert key == "mod:geo" and prompt == "# geo\n" + src[: src.index("    result")]
    assert body == src[src.index("    result"):] and (prompt[len("# geo\n"):] + body) == src
    skipped = [("geo", "geo.K", "class", LONG_DOC, FUNC), ("geo", "geo.f", "function", LONG_DOC, None),
               ("geo", "geo.f", "function", LONG_DOC, FUNC[:150]),                                   # under 200 characters
               ("geo", "geo.f", "function", LONG_DOC, FUNC.replace("        result = width * height\n", "")
                .replace('        if result < 0:\n            raise ValueError("negative area")\n', "")),  # body too short
               ("geo", "geo.f", "function", LONG_DOC, textwrap.indent(f'def f():\n    """{LONG_DOC}"""\n', "    ")),
               ("geo", "geo.f", "function", LONG_DOC, '    def f():\n        x = """\nno\n"""\n' + "    # pad\n" * 30)]
    assert list(corpus._code(skipped)) == []


def test_chat_qa_and_summary_records_from_hand_made_items():
    items = [("m", "m", "module", "Short module doc.", None), ("m", "m.f", "function", "x" * 250, "src"),
             ("m", "m.C", "class", "Builds many things. " + LONG_DOC + " " + LONG_DOC * 4, "src")]
    topics = {"for-loop": "Para one.\n\n" + "word " * 400}
    chat = list(corpus._chat(items, topics))
    assert chat[0] == ("topic:for-loop", "Explain for loop in Python.", "Para one.")
    assert chat[1][1] == "Tell me more about for loop in Python (part 2)."
    assert ("mod:m", "Explain what `m.f` does.", "x" * 250) in chat and ("mod:m", "Describe the class `m.C`.", items[2][3][:2000]) in chat
    assert not any(c[1].startswith("What is the Python module") for c in chat)   # under 200 characters: not asked
    qa = list(corpus._qa(items))
    assert qa == [("mod:m", "Question: what does `m` do?\nAnswer:", " Short module doc."),
                  ("mod:m", "Question: what does `m.C` do?\nAnswer:", " Builds many things."),
                  ("mod:m", "Question: which module defines `C`?\nAnswer:", " m")]
    summ = list(corpus._summarize(items, topics))
    assert len(summ) == 1 and summ[0][0] == "mod:m"
    assert summ[0][2] == " Builds many things. Return the area of a rectangle of the given width and height. The result is in square units."


_EQ = re.compile(r"((?:\d+ [-+*/] )+\d+) = \$?(-?\d+)")
_CLAMP = re.compile(r"Wednesday: (\d+) - (\d+) = 0 pages")


def _check_worked_answer(prompt, completion):
    """Every 'a op b = c' of the worked answer holds, and the final answer is the last result. One exception, a
    defect of the generator kept in the frozen corpus (the zoo was trained on it): a Wednesday of more pages fewer
    than Tuesday's is written 't - c = 0' (clamped, 4 of the 200 held-out math records)."""
    body, answer = completion.split("\n#### ")
    eqs = _EQ.findall(body)
    assert eqs, completion
    clamp = _CLAMP.search(body)
    for lhs, rhs in eqs:
        if clamp and lhs == f"{clamp[1]} - {clamp[2]}" and int(clamp[2]) > int(clamp[1]):
            continue
        assert eval(lhs) == int(rhs), (lhs, rhs, prompt)
    assert int(eqs[-1][1]) == int(answer)
    assert prompt.startswith("Question: ") and prompt.endswith("\nAnswer:")


def test_generated_math_answers_are_worked_correctly_for_every_kind():
    rng = random.Random(5)
    kinds = set()
    markers = ("packs of", "shares", "change", "pages", "jacket", "per hour")
    for _ in range(600):
        p, c = corpus._math_problem(rng)
        kinds |= {k for k, m in enumerate(markers) if m in p}
        _check_worked_answer(p, c)
    assert kinds == set(range(6))


def test_generated_sql_runs_on_its_schema_for_every_kind():
    rng = random.Random(3)
    seen = set()
    for _ in range(400):
        prompt, sql = corpus._sql_pair(rng)
        schema = prompt.split("-- Schema:\n")[1].split("\n-- Question:")[0]
        db = sqlite3.connect(":memory:")
        db.executescript(schema)
        db.execute(sql).fetchall()                                  # a wrong column or table raises here
        db.close()
        seen |= {m for m in ("COUNT(*)", "AVG(", "ORDER BY", "MAX(", "JOIN") if m in sql}
        seen |= {"WHERE ="} if re.match(r"SELECT \w+ FROM \w+ WHERE \w+ = ", sql) else set()
    assert seen == {"COUNT(*)", "AVG(", "ORDER BY", "MAX(", "JOIN", "WHERE ="}


@pytest.fixture
def small(monkeypatch, tmp_path):
    monkeypatch.setattr(corpus, "EVAL_PER_DOMAIN", 3)
    monkeypatch.setattr(corpus, "TRAIN_CHARS_PER_DOMAIN", 2000)
    items = list(corpus._stdlib_items(_stdlib(tmp_path)))
    items += [(f"m{i}", f"m{i}.f", "function", f"Does thing number {i} well. " + LONG_DOC * 3, FUNC) for i in range(40)]
    return items, {f"t{i}": ("Topic text. " * 40 + "\n\n") * 6 for i in range(10)}


def test_generate_holds_out_disjoint_prompts_and_stops_at_the_character_budget(small):
    items, topics = small
    out = corpus.generate(0, items, topics)
    assert out == corpus.generate(0, items, topics)
    assert out != corpus.generate(1, items, topics)
    for domain in corpus.DOMAINS:
        train = [r for r in out["train"] if r["domain"] == domain]
        ev = [r for r in out["eval"] if r["domain"] == domain]
        assert len(ev) <= 3 and not {r["prompt"] for r in train} & {r["prompt"] for r in ev}
        if domain in ("math", "sql"):               # generated: the first 3 prompts held out, train to the budget
            chars = sum(len(r["prompt"]) + len(r["completion"]) for r in train)
            assert len(ev) == 3 and chars >= 2000 and chars - max(len(r["prompt"]) + len(r["completion"]) for r in train) < 2000
    assert {r["domain"] for r in out["train"]} == set(corpus.DOMAINS)


def test_a_generator_out_of_new_prompts_ends_its_domain(small, monkeypatch):
    items, topics = small
    monkeypatch.setattr(corpus, "_math", lambda seed: iter(lambda: ("k", "Question: same?\nAnswer:", " 1"), None))
    out = corpus.generate(0, items, topics)
    assert [r["prompt"] for r in out["eval"] if r["domain"] == "math"] == ["Question: same?\nAnswer:"]
    assert not [r for r in out["train"] if r["domain"] == "math"]


def test_freeze_writes_identical_bytes_and_load_reads_them_back(small, monkeypatch, tmp_path):
    items, topics = small
    real = corpus.generate
    calls = []
    monkeypatch.setattr(corpus, "generate", lambda seed: (calls.append(seed), real(seed, items, topics))[1])
    d = corpus.freeze(tmp_path / "c", seed=0)
    first = (d / "train.jsonl.gz").read_bytes()
    assert corpus.freeze(d) == d and calls == [0]                  # frozen: not rebuilt
    corpus.freeze(d, force=True)
    assert (d / "train.jsonl.gz").read_bytes() == first and calls == [0, 0]
    want = real(0, items, topics)
    assert corpus.load("train", corpus_dir=d) == want["train"]
    assert corpus.load("eval", "sql", corpus_dir=d) == [r for r in want["eval"] if r["domain"] == "sql"]
    with pytest.raises(ValueError, match="split must be one of"):
        corpus.load("test", corpus_dir=d)
    with pytest.raises(ValueError, match="domain must be one of"):
        corpus.load("eval", "poetry", corpus_dir=d)
    with pytest.raises(FileNotFoundError, match="make zoo"):
        corpus.load("eval", corpus_dir=tmp_path / "none")


def test_the_committed_eval_split_holds_the_domains_and_checks_out():
    ev = corpus.load("eval")
    counts = {d: sum(r["domain"] == d for r in ev) for d in corpus.DOMAINS}
    assert counts["math"] == counts["sql"] == corpus.EVAL_PER_DOMAIN and 0 < min(counts.values()) and max(counts.values()) <= 200
    clamped = 0
    for r in (r for r in ev if r["domain"] == "math"):
        _check_worked_answer(r["prompt"], r["completion"])
        m = _CLAMP.search(r["completion"])
        clamped += bool(m and int(m[2]) > int(m[1]))
    assert clamped == 4
    for r in (r for r in ev if r["domain"] == "sql"):
        db = sqlite3.connect(":memory:")
        db.executescript(r["prompt"].split("-- Schema:\n")[1].split("\n-- Question:")[0])
        db.execute(r["completion"]).fetchall()
        db.close()
