"""specedge.profiling: FLOPs counts, the least-squares fit of eq (17), timing plumbing, profile writing.

No test asserts a timing: timings only feed fits whose algebra is tested on synthetic data.
"""
import numpy as np
import pandas as pd
import pytest

from specedge import hardware, host, paths, profiling

TINY = profiling.Architecture("tiny", layers=1, hidden=32, ffn=64, heads=2, vocab=97)


def test_decoder_flops_are_eqs_11_and_12():
    J, h1, h2 = 2, 768, 3072
    I = 100
    assert profiling.decoder_flops(J, h1, h2, I, 0) == J * (8 * I * h1 ** 2 + 4 * I ** 2 * h1 + 4 * I * h1 * h2)
    kv = 250
    assert profiling.decoder_flops(J, h1, h2, 1, kv) == J * (8 * h1 ** 2 + 4 * (kv + 1) * h1 + 4 * h1 * h2)
    np.testing.assert_allclose(profiling.decoder_flops(J, h1, h2, [1, 2], [0, 5]),
                               [profiling.decoder_flops(J, h1, h2, 1, 0), profiling.decoder_flops(J, h1, h2, 2, 5)])
    with pytest.raises(ValueError, match=">= 0"):
        profiling.decoder_flops(J, h1, h2, -1, 0)


def test_fit_recovers_exact_coefficients():
    rng = np.random.default_rng(0)
    F = rng.uniform(1e9, 1e12, 30)
    b = rng.integers(1, 33, 30)
    fit = profiling.fit_runtime(F, b, 2.5e-14 * F * b + 0.013)
    assert fit["c1"] == pytest.approx(2.5e-14, rel=1e-9)
    assert fit["c2"] == pytest.approx(0.013, rel=1e-6)
    assert fit["r2"] == pytest.approx(1.0) and fit["points"] == 30
    noisy = profiling.fit_runtime(F, b, 2.5e-14 * F * b + 0.013 + rng.normal(0, 0.05, 30))
    assert 0 < noisy["r2"] < 1
    with pytest.raises(ValueError, match="two points"):
        profiling.fit_runtime([1e9], [1], [0.1])
    with pytest.raises(ValueError, match="two points"):
        profiling.fit_runtime([1e9, 1e9], [2, 2], [0.1, 0.2])


def test_r_squared():
    assert profiling.r_squared([1, 2, 3], [1, 2, 3]) == 1.0
    assert profiling.r_squared([1, 2, 3], [2, 2, 2]) == pytest.approx(0.0)
    assert profiling.r_squared([2, 2], [2, 2]) == 1.0


def test_architecture_lookup_and_parsing():
    assert profiling.architecture("llama-7b").hidden == 4096
    a = profiling.architecture("mine:3:256:1024:4")
    assert (a.name, a.layers, a.hidden, a.ffn, a.heads) == ("mine", 3, 256, 1024, 4)
    for bad in ("nope", "x:1:2", "x:1:30:64:4", "x:0:32:64:2", "x:a:32:64:2"):
        with pytest.raises(ValueError):
            profiling.architecture(bad)


def test_grid_shapes():
    shapes = profiling.grid([1, 4], [16], [64, 128])
    assert ("prefill", 4, 16, 0) in shapes and ("decode", 1, 1, 128) in shapes and len(shapes) == 6


def test_measure_times_prefill_and_decode_shapes():
    shapes = [("prefill", 2, 8, 0), ("decode", 3, 1, 16), ("decode", 1, 4, 5)]
    df = profiling.measure(TINY, shapes, role="draft", repeats=2, progress=False)
    assert list(df.phase) == ["prefill", "decode", "decode"]
    assert (df.runtime_s > 0).all() and (df.runtime_s <= df.runtime_median_s).all()
    assert (df.runtime_median_s <= df.runtime_max_s).all() and (df.repeats == 2).all()
    np.testing.assert_allclose(df.flops_per_seq, profiling.arch_flops(TINY, df.new_tokens, df.context))


def test_random_cache_keeps_its_length_across_timed_passes():
    import torch

    from specedge.kv_cache_arg import cache_kw
    model = profiling.build_model(TINY)
    cache = profiling.random_cache(model, 2, 7)
    assert cache.get_seq_length() == 7
    with torch.inference_mode():
        model(input_ids=torch.zeros(2, 3, dtype=torch.long), **cache_kw(model, cache), use_cache=True)
    assert cache.get_seq_length() == 10
    cache.crop(-3)
    assert cache.get_seq_length() == 7
    with pytest.raises(ValueError, match="batch >= 1"):
        profiling.time_pass(model, 0, 1, 0)


def test_cli_writes_a_valid_profile_and_its_measurements(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "PROFILES", tmp_path)
    # shapes from 8 to 4 x 512 tokens: large enough that the slope rises well above timing noise
    rc = profiling.main(["--name", "zz_cli", "--role", "draft=tiny:1:256:512:4", "--role", "verify=tiny2:1:384:768:4",
                         "--batches", "1,4", "--prefill", "8,512", "--contexts", "8", "--repeats", "2",
                         "--no-progress"])
    assert rc == 0
    prof = hardware.load_profile(tmp_path / "zz_cli.yaml")
    assert prof.measured["csv"] == "zz_cli_measurements.csv"
    assert set(prof.runtime) == {"draft", "verify"}
    assert set(prof.coefficients("draft")) == {"c1", "c2"}
    df = pd.read_csv(tmp_path / "zz_cli_measurements.csv")
    assert len(df) == 2 * (2 * 2 + 2)
    fit = profiling.fit_runtime(df[df.role == "verify"].flops_per_seq, df[df.role == "verify"].batch,
                                df[df.role == "verify"].runtime_s)
    assert prof.coefficients("verify")["c1"] == pytest.approx(fit["c1"])
    assert profiling.load_measurements("zz_cli").shape == df.shape


def test_cli_refuses_a_fit_with_no_slope_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "PROFILES", tmp_path)
    monkeypatch.setattr(profiling, "fit_roles", lambda df: {"draft": dict(c1=0.0, c2=1e-3, r2=0.0, points=2)})
    with pytest.raises(SystemExit) as e:
        profiling.main(["--name", "zz_flat", "--role", "draft=tiny:1:32:64:2", "--batches", "1",
                        "--prefill", "4", "--contexts", "8", "--repeats", "1", "--no-progress"])
    assert e.value.code == 2
    assert "draft timings do not grow" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["--name", "x", "--role", "draft"], "ROLE=ARCH"),
    (["--name", "x", "--role", "draft=unknown"], "unknown architecture"),
    (["--name", "x", "--batches", "0,2"], "positive integers"),
    (["--name", "x", "--repeats", "0"], "--repeats"),
])
def test_cli_rejects_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit):
        profiling.main(argv)
    assert message in capsys.readouterr().err


def test_committed_cpu_profile_is_consistent_with_its_measurements():
    prof = hardware.load_profile("cpu_local")
    df = profiling.load_measurements("cpu_local")
    for role, fit in profiling.fit_roles(df).items():
        assert prof.coefficients(role)["c1"] == pytest.approx(fit["c1"], rel=1e-9)
        assert prof.coefficients(role)["c2"] == pytest.approx(fit["c2"], rel=1e-9)
        assert prof.runtime[role]["fit"]["r2"] == pytest.approx(fit["r2"], abs=1e-6)


# --------------------------------------------------------------------------- the device, the profile's fields, the CLI's edges
def test_the_device_is_named_and_sized_from_torch_for_cuda_and_from_the_os_for_the_cpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d: f"Fake GPU {d}")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: type("P", (), {"total_memory": 80 * 2 ** 30})())
    assert profiling.device_description("cuda:1") == "cuda: Fake GPU cuda:1"
    assert profiling.memory_bytes("cuda") == 80 * 2 ** 30
    assert profiling.device_description("cpu") == f"cpu: {host.cpu_name()}"
    monkeypatch.setattr(profiling.os, "sysconf", lambda name: {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 1000}[name])
    assert profiling.memory_bytes("cpu") == 4096 * 1000
    for err in (ValueError, OSError):
        def raises(name, err=err):
            raise err(name)
        monkeypatch.setattr(profiling.os, "sysconf", raises)
        assert profiling.memory_bytes("cpu") is None                  # unknown memory: no key, no crash


def test_build_profile_holds_one_runtime_model_per_role_and_only_known_memory(monkeypatch):
    monkeypatch.setattr(profiling, "memory_bytes", lambda device: None)
    fits = {"draft": dict(c1=2e-12, c2=1e-3, r2=0.98765432, points=6)}
    prof = profiling.build_profile("zz", fits, {"draft": TINY}, "cpu", "zz_measurements.csv", None, "float32", 3, "cmd")
    assert prof["devices"]["local"] == {"description": f"cpu: {host.cpu_name()}"}          # no threads, no memory
    rt = prof["runtime"]["draft"]
    assert (rt["c1"], rt["c2"], rt["model"]) == (2e-12, 1e-3, profiling.RUNTIME_MODEL)
    assert rt["fit"] == {"r2": 0.987654, "points": 6, "architecture": "tiny"}
    assert "tiny (J=1, h1=32, h2=64, 2 heads), decoder stack, float32" == rt["description"]
    assert prof["measured"]["threads"] == 0 and prof["measured"]["csv"] == "zz_measurements.csv"
    assert "`cmd` (fastest of 3 timed passes per shape" in prof["source"] and prof["links"] == {}
    monkeypatch.setattr(profiling, "memory_bytes", lambda device: 1e9)
    prof = profiling.build_profile("zz", fits, {"draft": TINY}, "cpu", "m.csv", 2, "float32", 3, "cmd")
    assert prof["devices"]["local"]["memory_bytes"] == 1e9 and prof["devices"]["local"]["description"].endswith(", 2 thread(s)")


def test_missing_measurements_name_the_command_that_writes_them(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "PROFILES", tmp_path)
    with pytest.raises(FileNotFoundError, match="python -m specedge.profiling --name zz_none"):
        profiling.load_measurements("zz_none")


def test_comma_separated_integers_are_positive_and_blank_items_are_skipped():
    import argparse

    assert profiling._ints("1,2, 4") == [1, 2, 4] and profiling._ints("8,,16,") == [8, 16]
    for bad in ("a", "1.5", "", ",", "0", "2,-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            profiling._ints(bad)


def test_paths_are_shown_relative_to_the_repository_when_inside_it(tmp_path):
    assert str(profiling._shown(paths.PROFILES / "x.yaml")) == "data/profiles/x.yaml"
    assert profiling._shown(tmp_path / "x.yaml") == tmp_path / "x.yaml"


@pytest.mark.parametrize("argv, message", [
    (["--name", "x", "--threads", "0"], "--threads must be >= 1"),
    (["--name", "x", "--device", "cuda"], "--device cuda: torch sees no CUDA device here"),
    (["--name", "x", "--role", "draft=t:1:30:64:4"], "must be a multiple of heads"),
])
def test_cli_refuses_a_device_or_thread_count_it_cannot_use(argv, message, capsys, monkeypatch, tmp_path):
    import torch

    monkeypatch.setattr(paths, "PROFILES", tmp_path)                # nothing written in data/profiles, whatever happens
    monkeypatch.setattr(profiling, "measure", lambda *a, **k: pytest.fail("measured with arguments it should refuse"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    threads = []
    monkeypatch.setattr(torch, "set_num_threads", threads.append)     # this process's threads stay as they are
    with pytest.raises(SystemExit) as err:
        profiling.main(argv)
    assert err.value.code == 2 and message in capsys.readouterr().err
    assert threads == ([1] if "--role" in argv else [])              # a refused thread count is never set


def test_pass_times_keeps_one_fastest_time_per_new_token_count():
    model = profiling.build_model(TINY)
    t = profiling.pass_times(model, context=4, new_tokens=(1, 3), repeats=2)
    assert list(t) == [1, 3] and all(isinstance(v, float) and v > 0 for v in t.values())


def test_loopback_rtt_echoes_the_payload_over_a_socket_pair(monkeypatch):
    """The echo logic without a listening port: the 'server' end is one side of a connected socket pair."""
    import socket as real

    a, b = real.socketpair()
    sent = []

    class Listener:
        def bind(self, addr):
            assert addr == ("127.0.0.1", 0)                    # loopback only

        def listen(self, n):
            pass

        def accept(self):
            return b, None

        def getsockname(self):
            return ("127.0.0.1", 1)

        def close(self):
            pass

    class Client:
        def setsockopt(self, *args):
            pass

        def sendall(self, msg):
            sent.append(len(msg))
            a.sendall(msg)

        def recv(self, n):
            return a.recv(n)

        def close(self):
            a.close()

    fake = type("FakeSocket", (), dict(socket=staticmethod(lambda: Listener()), IPPROTO_TCP=real.IPPROTO_TCP,
                                       TCP_NODELAY=real.TCP_NODELAY,
                                       create_connection=staticmethod(lambda addr: Client())))
    monkeypatch.setattr(profiling, "socket", fake)
    rtt = profiling.loopback_rtt(payload=64, repeats=3)
    assert rtt > 0 and sent and set(sent) == {64}
