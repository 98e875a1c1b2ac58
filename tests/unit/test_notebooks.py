"""The notebook runner (specedge.notebooks) without running a notebook: papermill, the worker processes and the
notebooks themselves are replaced by in-process fakes; its own logic (parameters passed, order, kernel
environment, failures, the command line) is what is tested."""
import asyncio
import concurrent.futures
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from specedge import host, notebooks, papers, paths, sweep


def _nb(stem: str) -> Path:
    return paths.NOTEBOOKS / f"{stem}.ipynb"


def _tables(monkeypatch, expected: dict, reads: dict) -> None:
    """The manifest's expected seconds and reads (by notebook name) replaced for one test."""
    monkeypatch.setattr(papers, "MANIFEST", SimpleNamespace(expected_s=expected, reads=reads))


# --------------------------------------------------------------------------- order and environment
def test_plan_starts_the_longest_first_unknown_ones_before_all_and_ties_by_name(monkeypatch):
    _tables(monkeypatch, {"a": 10, "b": 30, "c": 30}, {})
    order = [nb.stem for nb in notebooks.plan([_nb(s) for s in ("a", "c", "zz", "b", "new")])]
    assert order == ["new", "zz", "b", "c", "a"]          # unknown: expected long (by name), then 30, 30 by name, 10
    assert notebooks.plan([]) == []


def test_plan_puts_a_reader_after_what_it_reads_even_when_it_is_longest(monkeypatch):
    _tables(monkeypatch, {"reader": 100, "w1": 5, "w2": 50, "other": 20}, {"reader": ("w1", "w2")})
    order = [nb.stem for nb in notebooks.plan([_nb(s) for s in ("reader", "w1", "w2", "other")])]
    assert order == ["w2", "other", "w1", "reader"]
    alone = [nb.stem for nb in notebooks.plan([_nb("reader"), _nb("other")])]   # what it reads is not run: no wait
    assert alone == ["reader", "other"]
    assert notebooks._needs(_nb("reader"), [_nb("w1"), _nb("other")]) == [_nb("w1")]
    assert notebooks._needs(_nb("w1"), [_nb("reader")]) == []


@pytest.mark.parametrize("jobs, cores, workers", [(2, 5, "2"), (3, 7, "2"), (4, 2, "1"), (2, 2, "1"), (2, 1, "1")])
def test_kernel_env_caps_the_vector_kernels_and_splits_the_cores(jobs, cores, workers):
    env = notebooks.kernel_env(jobs, cores)
    assert env == {**host.PORTABLE_ENV, sweep.WORKERS_ENV: workers}


def test_kernel_env_of_one_notebook_at_a_time_leaves_the_sweep_workers_alone(monkeypatch):
    monkeypatch.setattr(sweep, "cores", lambda: 8)
    assert notebooks.kernel_env(1) == host.PORTABLE_ENV and sweep.WORKERS_ENV not in notebooks.kernel_env(1)
    assert notebooks.kernel_env(3)[sweep.WORKERS_ENV] == "2"     # this process's cores by default


def test_the_quiet_kernel_manager_interrupts_only_a_kernel_that_is_not_shutting_down(monkeypatch):
    from jupyter_client import AsyncKernelManager

    asked = []

    async def interrupt(self):
        asked.append(self.shutting_down)

    monkeypatch.setattr(AsyncKernelManager, "_async_interrupt_kernel", interrupt)
    km = notebooks._quiet_kernel_manager()()
    assert isinstance(km, AsyncKernelManager)
    km.shutting_down = True
    asyncio.run(km._async_interrupt_kernel())
    assert asked == []
    km.shutting_down = False
    asyncio.run(km._async_interrupt_kernel())
    assert asked == [False]


# --------------------------------------------------------------------------- one notebook through papermill (faked)
class FakePapermill:
    def __init__(self, declared):
        self.declared, self.calls = declared, []

    def inspect_notebook(self, path):
        return {k: {} for k in self.declared}

    def execute_notebook(self, src, out, **kw):
        self.calls.append((src, out, kw))


def test_run_passes_only_the_parameters_a_notebook_declares_and_writes_under_build(tmp_path, monkeypatch):
    pm = FakePapermill(["scale", "seed"])
    monkeypatch.setattr(notebooks, "pm", pm)
    monkeypatch.setattr(paths, "BUILD", tmp_path)
    out = notebooks.run(_nb("zhu2025_edge_sd"), "ci", seed=0, profile="cpu_local")
    assert out == tmp_path / "notebooks" / "ci" / "zhu2025_edge_sd.ipynb" and out.parent.is_dir()
    (src, written, kw), = pm.calls
    assert src == str(_nb("zhu2025_edge_sd")) and written == str(out)
    assert kw["parameters"] == {"scale": "ci", "seed": 0}       # seed 0 is passed (not dropped as falsy); no profile
    assert kw["kernel_name"] == "python3" and kw["cwd"] == str(paths.NOTEBOOKS) and kw["progress_bar"] is False
    notebooks.run(_nb("zhu2025_edge_sd"), "full")
    assert pm.calls[-1][2]["parameters"] == {"scale": "full"}  # seed None: the notebook's own
    with pytest.raises(ValueError, match="scale must be one of"):
        notebooks.run(_nb("zhu2025_edge_sd"), "huge")
    assert len(pm.calls) == 2                                   # refused before papermill ran


def test_attempt_returns_an_error_instead_of_raising_and_applies_its_environment(monkeypatch):
    monkeypatch.delenv("SPECEDGE_TEST_ENV", raising=False)      # removed again after the test
    monkeypatch.setattr(notebooks, "run", lambda nb, scale, seed, profile: Path(f"/out/{nb.stem}-{scale}-{seed}"))
    out, secs, error = notebooks._attempt(_nb("a"), "ci", 3, None, {"SPECEDGE_TEST_ENV": "1"})
    assert out == Path("/out/a-ci-3") and secs >= 0 and error is None
    assert notebooks.os.environ["SPECEDGE_TEST_ENV"] == "1"

    def fails(*a):
        raise RuntimeError("cell 4 raised")

    monkeypatch.setattr(notebooks, "run", fails)
    assert notebooks._attempt(_nb("a"), "ci", None, None, {})[::2] == (None, "RuntimeError: cell 4 raised")


# --------------------------------------------------------------------------- several notebooks
@pytest.fixture
def kernel_env_restored(monkeypatch):
    """``_attempt`` sets the kernels' environment in this process (a worker's, in a real run): put it back after."""
    for k in (*host.PORTABLE_ENV, sweep.WORKERS_ENV):
        monkeypatch.delenv(k, raising=False)


def _fake_run(log, fail=()):
    def run(nb, scale, seed, profile):
        log.append((nb.stem, scale, seed, profile))
        if nb.stem in fail:
            raise RuntimeError(f"{nb.stem} broke")
        return paths.ROOT / "build" / "notebooks" / scale / nb.name
    return run


def test_execute_one_at_a_time_runs_every_notebook_in_plan_order_and_names_the_failures(monkeypatch, capsys,
                                                                                        kernel_env_restored):
    log = []
    monkeypatch.setattr(notebooks, "run", _fake_run(log, fail={"b"}))
    _tables(monkeypatch, {"a": 1, "b": 2, "c": 3}, {})
    with pytest.raises(SystemExit, match=r"\[specedge\] failed: b \(executed copies in build/notebooks/ci/\)"):
        notebooks.execute([_nb("a"), _nb("b"), _nb("c")], "ci", seed=7, profile="p", jobs=1)
    assert log == [("c", "ci", 7, "p"), ("b", "ci", 7, "p"), ("a", "ci", 7, "p")]   # the one after a failure still ran
    out = capsys.readouterr().out
    assert "[specedge] c.ipynb (scale=ci, profile=p) ..." in out and "b FAILED after" in out and "RuntimeError: b broke" in out
    assert "a done in 0 s -> build/notebooks/ci/a.ipynb" in out
    log.clear()
    monkeypatch.setattr(notebooks, "run", _fake_run(log))
    seconds = notebooks.execute([_nb("a")], "full", jobs=4)     # more jobs than notebooks: one at a time, in process
    assert list(seconds) == ["a"] and log == [("a", "full", None, None)]
    assert {k: notebooks.os.environ.get(k) for k in host.PORTABLE_ENV} == host.PORTABLE_ENV   # the kernels: capped
    assert sweep.WORKERS_ENV not in notebooks.os.environ
    assert "(scale=full) ..." in capsys.readouterr().out


@pytest.mark.parametrize("jobs", [0, -1, True, 1.5, "2"])
def test_execute_refuses_a_bad_job_count_before_running_anything(monkeypatch, jobs):
    monkeypatch.setattr(notebooks, "run", lambda *a: pytest.fail("ran"))
    with pytest.raises(ValueError, match="jobs: an integer >= 1"):
        notebooks.execute([_nb("a")], "ci", jobs=jobs)


class _Pool(concurrent.futures.ThreadPoolExecutor):
    """The process pool, as threads in this process (the runner's scheduling is what is tested)."""

    def __init__(self, jobs, mp_context=None):
        assert mp_context is not None and mp_context.get_start_method() == "spawn"   # a fresh interpreter per notebook
        super().__init__(jobs)


def test_execute_side_by_side_starts_a_reader_only_after_what_it_reads_ended(monkeypatch, capsys):
    events, lock = [], threading.Lock()

    def attempt(nb, scale, seed, profile, env):
        with lock:
            events.append(("start", nb.stem))
        assert env[sweep.WORKERS_ENV] == "2" and env["ATEN_CPU_CAPABILITY"] == "avx2"
        with lock:
            events.append(("end", nb.stem))
        return (None if nb.stem == "w2" else paths.ROOT / nb.name), 1.0, ("ValueError: x" if nb.stem == "w2" else None)

    monkeypatch.setattr(notebooks, "ProcessPoolExecutor", _Pool)
    monkeypatch.setattr(notebooks, "_attempt", attempt)
    monkeypatch.setattr(notebooks, "kernel_env", lambda jobs, cores=4: {**host.PORTABLE_ENV, sweep.WORKERS_ENV: str(cores // jobs)})
    _tables(monkeypatch, {"reader": 100, "w1": 5, "w2": 50, "other": 20}, {"reader": ("w1", "w2")})
    with pytest.raises(SystemExit, match="failed: w2"):           # a failed writer still lets the reader run
        notebooks.execute([_nb(s) for s in ("reader", "w1", "w2", "other")], "ci", jobs=2)
    starts = [s for e, s in events if e == "start"]
    assert sorted(starts) == ["other", "reader", "w1", "w2"]
    reader = events.index(("start", "reader"))
    assert events.index(("end", "w1")) < reader and events.index(("end", "w2")) < reader
    out = capsys.readouterr().out
    assert "[specedge] 4 notebooks, 2 at a time (kernels: " in out and f"{sweep.WORKERS_ENV}=2" in out


# --------------------------------------------------------------------------- the command line
def test_main_refuses_bad_arguments_with_one_line(monkeypatch, capsys):
    monkeypatch.setattr(notebooks, "execute", lambda *a, **k: pytest.fail("ran"))
    for argv, said in ((["--jobs", "0"], "--jobs: an integer >= 1, got 0"),
                       (["nope"], "no notebook matches ['nope']"),
                       (["--scale", "huge"], "invalid choice: 'huge'"),
                       (["--profile", "no_such_profile", "zhu2025"], "--profile: ")):
        with pytest.raises(SystemExit) as err:
            notebooks.main(argv)
        assert err.value.code == 2
        assert said in capsys.readouterr().err, argv


def test_main_runs_the_notebooks_a_profile_serves_with_the_profile_resolved(monkeypatch):
    got = {}
    monkeypatch.setattr(notebooks, "execute", lambda todo, scale, seed, profile, jobs: got.update(
        todo=[nb.stem for nb in todo], scale=scale, seed=seed, profile=profile, jobs=jobs) or {})
    monkeypatch.setattr(notebooks, "_profile_plan", lambda profile, todo: ("/abs/" + profile, todo[:1]))
    assert notebooks.main(["--scale", "ci", "--seed", "0", "--jobs", "3", "--profile", "mine.yaml", "zhu2025", "li2026"]) == 0
    assert got == dict(todo=["li2026_wisp"], scale="ci", seed=0, profile="/abs/mine.yaml", jobs=3)
