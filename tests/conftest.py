"""Shared test settings."""
import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """The test models are tiny: one thread is as fast, and two threads on a busy 2-core machine
    can be fifty times slower (they spin waiting for each other)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def twin_files(tmp_path):
    """Stand-in ``stochastic_vs_real.csv`` tables: ``make({setting: {metric: pct}})`` writes, per setting, rows of
    the sweeps' twin kind (``twin_error.DOMAIN_IID``) whose largest |difference| at p50 of each metric is ``pct``
    (a smaller one and a p90 beside it, and a larger one of the validated kind, which must not be read), and
    returns {setting: path} for the ``files`` arguments. A setting with runs whose classes bind
    (``twin_error.BINDING``) gets beside it the same rows as its table of those runs, and their violation rates, the
    sweeps' twin ``points`` percentage points from the real runs' at worst (a validated twin 50 points off beside it,
    and a pooled row 90 points off: neither may be read)."""
    from specedge.serving.analysis import twin_error

    def make(errors: dict, points: float = 12.0) -> dict:
        out = {}
        for setting, by_metric in errors.items():
            rows = []
            for metric, pct in by_metric.items():
                for run, (q, d, kind) in enumerate([("p50", -pct, twin_error.DOMAIN_IID), ("p50", pct / 2, twin_error.DOMAIN_IID),
                                                    ("p90", 10 * pct + 1, twin_error.DOMAIN_IID),
                                                    ("p50", 10 * pct + 2, twin_error.VALIDATED)]):
                    rows.append(dict(paper=setting, policy="P", n_clients=run + 1, repeat=0, component=kind, metric=metric,
                                     quantile=q, real=1.0, twin=1.0 + d / 100, diff=d / 100, diff_pct=d))
            path = tmp_path / f"{setting}_stochastic_vs_real.csv"
            import pandas as pd
            pd.DataFrame(rows).to_csv(path, index=False)
            out[setting] = path
            if setting in twin_error.BINDING:
                pd.DataFrame(rows).to_csv(tmp_path / f"{setting}_slo_binding_vs_real.csv", index=False)
                # per run: rounds' rates; responses (50 a class) whose rates differ as the rounds' do
                run = dict(paper=setting, policy="P", n_clients=4, repeat=1, rounds=100, deadline_miss_pct=0.0, responses=50)
                pd.DataFrame([dict(run, side=side, slo_class=c, violation_pct=v, response_violations=round(v / 2),
                                   response_violation_pct=v) for side, c, v in [
                    ("real", "80", 40.0), ("real", "40", 10.0), ("real", "all", 5.0),
                    (twin_error.DOMAIN_IID, "80", 40.0 + points), (twin_error.DOMAIN_IID, "40", 10.0 - points / 2),
                    (twin_error.DOMAIN_IID, "all", 95.0), (twin_error.VALIDATED, "80", 90.0)]]).to_csv(
                    tmp_path / f"{setting}_slo_binding_outcomes.csv", index=False)
        return out

    return make
