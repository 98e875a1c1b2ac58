"""WISP's token-speed SLOs (li2026 Section 3.1, eqs 4-6, 12, 17): one definition of each quantity.

Classes. The paper numbers its classes in opposite orders: Table 1 has Class 1 = 8 tok/s ... Class 4 =
2 tok/s, Section 5.3 has Class 1-4 = 2, 4, 6, 8 tok/s, and Table 2's capacities fall from Class 1 to
Class 4 (a looser class serves more devices). We take Section 5.3's order, the one that makes Tables 2
and 3 and the text ("strongest gains under tighter SLOs, larger tau") consistent, and name every class
by its speed in tok/s everywhere, so no reading is hidden: ``CLASSES[k - 1]`` is Class k.

- achieved speed of one iteration, eq (4): s = N^v / (T_draft + T_network + T_queue + T_verify);
- expected verified tokens, eq (5): N^v_hat = alpha * N_d;
- server-side budget, eq (6): tau_c = alpha * N_d / s_c - T_draft - T_network;
- deadline, eq (12): d_i = a_i + tau_c(i);
- latest start time, eq (17): LST_i = d_i - v_hat_i - delta.

N^v counts the tokens an iteration commits (accepted drafts + the correction/bonus token,
``Outcome.tokens``): what the device's user sees. Eq (5)'s estimate leaves the bonus token out, as the
paper does; it only ranks and budgets requests.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .timegrid import ns

CLASSES = (2, 4, 6, 8)   # tok/s; Class k = CLASSES[k - 1] (Section 5.3's numbering)


def _check(name: str, value, low: float = 0.0, strict: bool = False) -> float:
    v = float(value)
    if not np.isfinite(v) or (v <= low if strict else v < low):
        raise ValueError(f"{name}: must be a finite number {'>' if strict else '>='} {low}, got {value!r}")
    return v


def expected_tokens(alpha: float, n_draft: int) -> float:
    """Eq (5): N^v_hat = alpha * N_d."""
    a = _check("alpha", alpha)
    if a > 1:
        raise ValueError(f"alpha: must lie in [0, 1], got {alpha!r}")
    return a * _check("n_draft", n_draft)


def budget(alpha: float, n_draft: int, speed: float, t_draft: float, t_network: float) -> float:
    """Eq (6): tau_c = alpha * N_d / s_c - T_draft - T_network (s; negative when the device's own
    drafting and network time already exceed what the class allows)."""
    return (expected_tokens(alpha, n_draft) / _check("speed", speed, strict=True)
            - _check("t_draft", t_draft) - _check("t_network", t_network))


def deadline(arrival: float, alpha: float, n_draft: int, speed: float, t_draft: float, t_network: float) -> float:
    """Eq (12): d_i = a_i + tau_c(i)."""
    return float(arrival) + budget(alpha, n_draft, speed, t_draft, t_network)


def latest_start(deadline_s: float, v_hat: float, delta: float) -> float:
    """Eq (17): LST_i = d_i - v_hat_i - delta."""
    return float(deadline_s) - _check("v_hat", v_hat) - _check("delta", delta)


def speed(tokens, seconds):
    """Eq (4): committed tokens over the iteration's wall time (tok/s)."""
    return np.asarray(tokens, float) / np.asarray(seconds, float)


def slower(tokens, seconds, speed_) -> np.ndarray:
    """Eq (4) below the class: ``tokens / seconds < speed_``, decided as ``seconds`` exceeding the time
    the class allows (``tokens / speed_``) in whole nanoseconds (``timegrid``: a few-ulp difference in
    a summed time decides nothing; a round exactly at its class speed meets it)."""
    t, n, c = (np.asarray(v, float) for v in (seconds, tokens, speed_))
    return ns(t) > ns(n / c)


def violations(log: pd.DataFrame) -> np.ndarray:
    """Per row of a per-round log (``interfaces.LOG_COLUMNS``) with an SLO class: the iteration's
    achieved speed (eq 4, ``tokens / t_round``) fell below its class."""
    cls = pd.to_numeric(log["slo_class"], errors="coerce").to_numpy(float)
    if np.isnan(cls).any():
        raise ValueError("log: rows without an slo_class cannot violate an SLO")
    return slower(log["tokens"], log["t_round"], cls)
