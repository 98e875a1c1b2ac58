"""The zoo's training corpus: six domains of redistributable text, frozen under ``data/corpus/``.

Every record is ``{"domain", "prompt", "completion"}``; a model is trained on ``prompt + completion``
of the *train* split, and a speculative decoder is fed the ``prompt`` of an *eval* record (the
completion is the reference continuation). The domains stand in for the papers' benchmarks:

============  ==================  ==========================================================
domain        stands in for       source
============  ==================  ==========================================================
chat          MT-bench / Alpaca   "Explain <topic>." -> CPython's ``pydoc_data.topics`` text
                                  and standard-library docstrings (PSF licence)
code          HumanEval           standard-library functions: signature + docstring -> body
math          GSM8K               generated arithmetic word problems with worked answers
summarize     CNN/DailyMail       long documentation sections -> their lead sentences
qa            Natural Questions   generated questions on stdlib docstrings, short answers
sql           SPIDER              generated text-to-SQL pairs over a generated schema
============  ==================  ==========================================================

Only text that ships with Python or that this module generates is used, so the corpus may be
redistributed; it is built once and frozen (``build`` writes gzip'd JSONL with a fixed mtime), so
it does not change with the Python version that later loads it.
"""
from __future__ import annotations

import ast
import gzip
import hashlib
import io
import json
import random
import re
import sysconfig
import textwrap
from pathlib import Path

from .. import paths

DOMAINS = ("chat", "code", "math", "summarize", "qa", "sql")
SPLITS = ("train", "eval")
EVAL_PER_DOMAIN = 200          # held-out records per domain (never trained on)
TRAIN_CHARS_PER_DOMAIN = 1_300_000   # caps the corpus at a few MB compressed
_SKIP_DIRS = {"test", "tests", "idlelib", "lib2to3", "site-packages", "turtledemo", "ensurepip",
              "pydoc_data", "__pycache__", "config-3.11-x86_64-linux-gnu"}


def _is_eval(key: str, fraction: float) -> bool:
    """Deterministic held-out membership from a stable hash of a record's group key."""
    h = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
    return h / 0xFFFFFFFF < fraction


def _sentences(text: str) -> list[str]:
    text = re.sub(r"\s+", " ", text).strip()
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`*\"'(])", text) if s]


# ----------------------------------------------------------------------------- Python-shipped text
def _stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _stdlib_files(root: Path | None = None) -> list[Path]:
    root = Path(root or _stdlib_root())
    files = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root)
        if any(part in _SKIP_DIRS or part.startswith("test") for part in rel.parts):
            continue
        files.append(p)
    return files


def _module_name(path: Path, root: Path | None = None) -> str:
    root = Path(root or _stdlib_root())
    name = ".".join(path.relative_to(root).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _stdlib_items(root: Path | None = None):
    """(module, qualified name, kind, docstring, source) of documented stdlib defs (of the Python files under
    ``root``, default the running Python's standard library), sorted."""
    for path in _stdlib_files(root):
        try:
            src = path.read_text(encoding="utf-8")
            tree = ast.parse(src)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        mod = _module_name(path, root)
        doc = ast.get_docstring(tree)
        if doc:
            yield mod, mod, "module", doc, None
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            defs = [(node, node.name)]
            if isinstance(node, ast.ClassDef):
                defs += [(n, f"{node.name}.{n.name}") for n in node.body
                         if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for n, qual in defs:
                if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                d = ast.get_docstring(n)
                if not d or qual.split(".")[-1].startswith("_"):
                    continue
                seg = ast.get_source_segment(src, n, padded=True)
                kind = "class" if isinstance(n, ast.ClassDef) else "function"
                yield mod, f"{mod}.{qual}", kind, d, seg


def _topics() -> dict[str, str]:
    from pydoc_data.topics import topics  # CPython's bundled language reference (PSF licence)
    return dict(sorted(topics.items()))


def _chunks(text: str, size: int) -> list[str]:
    """Paragraph-aligned chunks of about ``size`` characters."""
    out, cur = [], ""
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para:
            continue
        if cur and len(cur) + len(para) > size:
            out.append(cur)
            cur = ""
        cur = f"{cur}\n\n{para}" if cur else para
    if cur:
        out.append(cur)
    return out


def _chat(items, topics):
    for name, text in topics.items():
        title = name.replace("-", " ")
        for i, chunk in enumerate(_chunks(text, 1500)):
            ask = f"Explain {title} in Python." if i == 0 else f"Tell me more about {title} in Python (part {i + 1})."
            yield f"topic:{name}", ask, chunk
    for mod, qual, kind, doc, _ in items:
        if len(doc) < 200:
            continue
        ask = {"module": f"What is the Python module `{qual}` for?",
               "class": f"Describe the class `{qual}`.",
               "function": f"Explain what `{qual}` does."}[kind]
        yield f"mod:{mod}", ask, doc[:2000]


def _code(items):
    for mod, qual, kind, doc, seg in items:
        if kind != "function" or seg is None or not 200 <= len(seg) <= 2500:
            continue
        seg = textwrap.dedent(seg)
        try:
            node = ast.parse(seg).body[0]
        except SyntaxError:      # e.g. a multi-line string at column 0 defeats dedent
            continue
        body0 = node.body[1] if len(node.body) > 1 else None
        if body0 is None:
            continue
        lines = seg.splitlines(keepends=True)
        head = "".join(lines[: body0.lineno - 1])
        body = "".join(lines[body0.lineno - 1:])
        if len(body) < 60:
            continue
        yield f"mod:{mod}", f"# {mod}\n{head}", body


def _summarize(items, topics):
    docs = []
    for name, text in topics.items():
        docs += [(f"topic:{name}", c) for c in _chunks(text, 1800) if len(c) > 700]
    docs += [(f"mod:{mod}", doc) for mod, _, _, doc, _ in items if len(doc) > 700]
    for key, doc in docs:
        sents = _sentences(doc)
        if len(sents) < 5:
            continue
        summary = " ".join(sents[:3])  # the lead-3 summary, CNN/DM's classic reference baseline
        yield key, f"Article:\n{doc[:1800]}\n\nSummary:", f" {summary}"


def _qa(items):
    for mod, qual, kind, doc, _ in items:
        sents = _sentences(doc)
        if not sents or len(sents[0]) > 200 or len(sents[0]) < 15:
            continue
        yield f"mod:{mod}", f"Question: what does `{qual}` do?\nAnswer:", f" {sents[0]}"
        if kind != "module":
            yield f"mod:{mod}", f"Question: which module defines `{qual.rsplit('.', 1)[-1]}`?\nAnswer:", f" {mod}"


# ----------------------------------------------------------------------------- generated text
_NAMES = ["Ava", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jade", "Kofi",
          "Lena", "Mateo", "Nia", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Viktor"]
_ITEMS = ["apples", "pencils", "stickers", "marbles", "books", "cookies", "stamps", "coins",
          "cards", "shells", "tickets", "plants", "cupcakes", "bottles", "puzzles", "kites"]


def _math_problem(rng: random.Random) -> tuple[str, str]:
    n, m = rng.sample(_NAMES, 2)
    it = rng.choice(_ITEMS)
    a, b, c = rng.randint(3, 60), rng.randint(2, 12), rng.randint(2, 30)
    price = rng.randint(2, 15)
    kind = rng.randrange(6)
    if kind == 0:
        q = f"{n} has {a} {it}. {m} gives {n} {c} more, then {n} buys {b} packs of {price} {it} each. How many {it} does {n} have now?"
        s = f"After the gift {n} has {a} + {c} = {a + c} {it}. The packs hold {b} * {price} = {b * price} {it}. In total {a + c} + {b * price} = {a + c + b * price}."
        ans = a + c + b * price
    elif kind == 1:
        tot = a * b
        q = f"{n} shares {tot} {it} equally among {b} friends and keeps none. Each friend then gives {m} {min(c, a)} {it}. How many {it} does each friend have left?"
        k = min(c, a)
        s = f"Each friend gets {tot} / {b} = {a} {it}. After giving away {k}, each has {a} - {k} = {a - k}."
        ans = a - k
    elif kind == 2:
        q = f"A box of {it} costs ${price}. {n} buys {b} boxes and pays with ${b * price + c}. How much change does {n} get?"
        s = f"The boxes cost {b} * {price} = ${b * price}. The change is {b * price + c} - {b * price} = ${c}."
        ans = c
    elif kind == 3:
        q = f"{n} reads {a} pages on Monday and twice as many on Tuesday. On Wednesday {n} reads {c} pages fewer than on Tuesday. How many pages did {n} read in the three days?"
        t, w = 2 * a, max(2 * a - c, 0)
        s = f"Tuesday: 2 * {a} = {t} pages. Wednesday: {t} - {c} = {w} pages. Total: {a} + {t} + {w} = {a + t + w}."
        ans = a + t + w
    elif kind == 4:
        pct = rng.choice([10, 20, 25, 50])
        base = price * 20
        q = f"A jacket costs ${base}. It is on sale for {pct}% off, and {n} also uses a ${c} coupon. What does {n} pay?"
        off = base * pct // 100
        s = f"The discount is {pct}% of {base} = ${off}, so the sale price is {base} - {off} = ${base - off}. With the coupon: {base - off} - {c} = ${base - off - c}."
        ans = base - off - c
    else:
        h = rng.randint(2, 9)
        q = f"{n} earns ${price + 8} per hour and works {h} hours a day for {b} days. {n} spends ${c} on lunch. How much money does {n} keep?"
        e = (price + 8) * h * b
        s = f"Daily pay is {price + 8} * {h} = ${(price + 8) * h}. Over {b} days: {(price + 8) * h} * {b} = ${e}. After lunch: {e} - {c} = ${e - c}."
        ans = e - c
    return f"Question: {q}\nAnswer:", f" {s}\n#### {ans}"


def _math(seed: int):
    rng = random.Random(seed)
    while True:
        p, c = _math_problem(rng)
        yield p, p, c


_TABLES = {
    "singer": ["singer_id", "name", "country", "age", "genre"],
    "concert": ["concert_id", "venue", "year", "singer_id", "attendance"],
    "student": ["student_id", "name", "major", "age", "gpa"],
    "course": ["course_id", "title", "department", "credits", "student_id"],
    "employee": ["employee_id", "name", "department", "salary", "city"],
    "flight": ["flight_id", "origin", "destination", "distance", "price"],
    "product": ["product_id", "name", "category", "price", "stock"],
    "orders": ["order_id", "product_id", "quantity", "year", "city"],
    "airport": ["airport_id", "city", "country", "elevation", "runways"],
    "movie": ["movie_id", "title", "genre", "year", "budget"],
    "team": ["team_id", "name", "city", "wins", "founded"],
    "player": ["player_id", "name", "team_id", "age", "goals"],
    "hospital": ["hospital_id", "name", "city", "beds", "staff"],
    "book": ["book_id", "title", "genre", "pages", "price"],
}
_NUMERIC = {"age", "year", "attendance", "gpa", "credits", "salary", "distance", "price", "stock",
            "quantity", "elevation", "runways", "budget", "wins", "founded", "goals", "beds", "staff",
            "pages"}
_VALUES = {"country": ["France", "Japan", "Brazil", "Kenya", "Canada", "India", "Peru"],
           "genre": ["jazz", "rock", "pop", "drama", "comedy", "fantasy", "history"],
           "major": ["math", "history", "biology", "physics", "art"],
           "department": ["sales", "research", "math", "legal", "support"],
           "city": ["Paris", "Lima", "Oslo", "Cairo", "Seoul", "Austin", "Dublin", "Nairobi"],
           "origin": ["Boston", "Denver", "Madrid", "Sydney"], "destination": ["Tokyo", "Rome", "Quito", "Delhi"],
           "category": ["toys", "garden", "books", "tools", "music"],
           "venue": ["Arena", "Hall", "Stadium", "Theatre"], "title": ["Algebra", "Poetry", "Optics", "Ethics"],
           "name": ["Alice", "Bob", "Carmen", "Deepak", "Emma", "Farid"]}


def _sql_pair(rng: random.Random) -> tuple[str, str]:
    table = rng.choice(sorted(_TABLES))
    cols = _TABLES[table]
    num = [c for c in cols if c in _NUMERIC]
    cat = [c for c in cols if c in _VALUES]
    schema = f"CREATE TABLE {table} ({', '.join(cols)});"
    kind = rng.randrange(6)
    n, c = rng.choice(num), rng.choice(cat)
    v, k = rng.choice(_VALUES[c]), rng.randint(1, 500)
    if kind == 0:
        q, s = f"How many {table} rows have {n} greater than {k}?", f"SELECT COUNT(*) FROM {table} WHERE {n} > {k};"
    elif kind == 1:
        q, s = f"List the {cols[1]} of every {table} whose {c} is {v}.", f"SELECT {cols[1]} FROM {table} WHERE {c} = '{v}';"
    elif kind == 2:
        q, s = f"What is the average {n} for each {c}?", f"SELECT {c}, AVG({n}) FROM {table} GROUP BY {c};"
    elif kind == 3:
        lim = rng.randint(1, 10)
        q, s = f"Show the {lim} {table} rows with the highest {n}.", f"SELECT * FROM {table} ORDER BY {n} DESC LIMIT {lim};"
    elif kind == 4:
        q, s = f"What are the maximum and minimum {n} of {table} with {c} {v}?", f"SELECT MAX({n}), MIN({n}) FROM {table} WHERE {c} = '{v}';"
    else:
        other = rng.choice([t for t in sorted(_TABLES) if t != table and set(_TABLES[t]) & set(cols) - {"name"}])
        key = sorted(set(_TABLES[other]) & set(cols) - {"name"})[0]
        schema += f"\nCREATE TABLE {other} ({', '.join(_TABLES[other])});"
        oc = _TABLES[other][1]
        q = f"For each {table} show its {cols[1]} together with the {oc} of the matching {other}."
        s = f"SELECT T1.{cols[1]}, T2.{oc} FROM {table} AS T1 JOIN {other} AS T2 ON T1.{key} = T2.{key};"
    return f"-- Schema:\n{schema}\n-- Question: {q}\n", s


def _sql(seed: int):
    rng = random.Random(seed)
    while True:
        p, c = _sql_pair(rng)
        yield p, p, c


# ----------------------------------------------------------------------------- assembly
def generate(seed: int = 0, items=None, topics=None) -> dict[str, list[dict]]:
    """Assemble both splits from scratch: ``{split: [record, ...]}``, deterministic for a Python build. ``items``
    (``_stdlib_items``' tuples) and ``topics`` (name -> text) default to the running Python's own."""
    items = list(_stdlib_items()) if items is None else list(items)
    topics = _topics() if topics is None else dict(topics)
    sources = {
        "chat": (_chat(items, topics), 0.1),
        "code": (_code(items), 0.06),
        "math": (_math(seed + 1), None),
        "summarize": (_summarize(items, topics), 0.2),
        "qa": (_qa(items), 0.06),
        "sql": (_sql(seed + 2), None),
    }
    out = {s: [] for s in SPLITS}
    for domain, (gen, frac) in sources.items():
        train, ev, chars, seen, dup = [], [], 0, set(), 0
        for key, prompt, completion in gen:
            if prompt in seen:       # a prompt occurs once: train/eval prompts are disjoint
                dup += 1
                if dup > 20_000:     # a generator's space of distinct prompts is exhausted
                    break
                continue
            seen.add(prompt)
            dup = 0
            rec = {"domain": domain, "prompt": prompt, "completion": completion}
            # generated domains: the first EVAL_PER_DOMAIN unique prompts are held out
            held = len(ev) < EVAL_PER_DOMAIN if frac is None else _is_eval(key, frac)
            if held:
                if len(ev) < EVAL_PER_DOMAIN:
                    ev.append(rec)
                continue
            if chars >= TRAIN_CHARS_PER_DOMAIN:
                if frac is None:
                    break
                continue
            train.append(rec)
            chars += len(prompt) + len(completion)
        random.Random(f"{seed}-{domain}").shuffle(train)
        out["train"] += train
        out["eval"] += ev
    return out


def _write_jsonl_gz(path: Path, records: list[dict]) -> None:
    buf = io.BytesIO()
    # mtime=0 and no filename: the same records give byte-identical files
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
        for r in records:
            f.write((json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n").encode())
    path.write_bytes(buf.getvalue())


def freeze(corpus_dir: Path | None = None, seed: int = 0, force: bool = False) -> Path:
    """Write ``train.jsonl.gz`` and ``eval.jsonl.gz`` unless already frozen (``force`` rebuilds)."""
    corpus_dir = Path(corpus_dir or paths.CORPUS)
    if not force and all((corpus_dir / f"{s}.jsonl.gz").exists() for s in SPLITS):
        return corpus_dir
    corpus_dir.mkdir(parents=True, exist_ok=True)
    for split, recs in generate(seed).items():
        _write_jsonl_gz(corpus_dir / f"{split}.jsonl.gz", recs)
    return corpus_dir


def load(split: str = "train", domain: str | None = None, corpus_dir: Path | None = None) -> list[dict]:
    """Records of one split (optionally one domain) of the frozen corpus."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if domain is not None and domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
    path = Path(corpus_dir or paths.CORPUS) / f"{split}.jsonl.gz"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python -m specedge.zoo build` (make zoo)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        recs = [json.loads(line) for line in f]
    return [r for r in recs if domain is None or r["domain"] == domain]
