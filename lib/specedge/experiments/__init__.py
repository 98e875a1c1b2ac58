"""Experiment drivers: what the notebooks call on top of the algorithms (``solvers``) and the systems
(``serving``, ``predictor``, ``early_exit``) — sweeps, verdicts and the measuring steps that write data/.

| module | what |
|---|---|
| ``zhu2025`` / ``zhu2025_figures`` | Edge-SD's Table II from a profile and its sweeps / its figures and comparison rows |
| ``zheng2025_figures`` | TK-SLT's figures and comparison rows (Tables I-II, Figs 2-4, zoo and real pair, both cost sources) |
| ``zheng2025_measure`` | ``python -m specedge.experiments.zheng2025_measure measure``: zoo pass times -> a profile |
| ``venkatesha2025_tables`` / ``venkatesha2025_figures`` / ``venkatesha2025_runs`` | FSD's comparison rows (Tables 1-9, Figs 4, 6) / Fig 6 (eq 9 heatmaps) / the zoo runs behind Table 6 |
| ``venkatesha2025_realpair`` | ``make realpair-exits``: early-exit adapters, exit traces and timings on the real pair, and its rows |
| ``venkatesha2025_measure`` | ``python -m specedge.experiments.venkatesha2025_measure``: Table 5/9 timings, concurrent run |
| ``tran2025`` / ``tran2025_figures`` | GOODSPEED's twin experiments and its real gRPC runs (``... tran2025 measure``) / its figures and comparison rows |
| ``li2026`` | WISP's serving experiments on the twin (Tables 1-3, Figs 5-8) and their calibration on Table 3 |
| ``li2026_serving_figures`` / ``li2026_estimator_figures`` | WISP's serving rows (Tables 1-3, 6, Figs 7-8) / the verification estimator's rows (Fig 4, Tables 7, 12, Figs 9, 11) |
| ``li2026_drafting`` / ``li2026_drafting_waste`` | WISP's predictor: accuracy rows (Tables 4, 8, 10, 11, Figs 2-3) / wasted-drafting rows (Theorem 1, Table 5, Fig 1) |
| ``li2026_real`` | WISP's and centralized serving's real runs (``... li2026_real measure``) |
| ``device_goodput`` | li2026 Fig 1: modelled device goodput per round (eq 19 verification time) |
| ``realpair_card`` | ``python -m specedge.experiments.realpair_card``: the real pair's acceptance card -> data/realpair/ |
| ``realpair_serving`` | ``python -m specedge.experiments.realpair_serving``: the real serving system on the real pair, and its replay |
| ``realpair_twin`` | the real pair's traces and workload as the serving twins' input |
| ``realpair_gamma`` | ``python -m specedge.experiments.realpair_gamma``: which γ wins per domain on the real pair |
| ``realpair_readme`` | ``python -m specedge.experiments.realpair_readme``: docs/real-pair.md's tables from the committed files |
| ``li2026_realpair`` | WISP's serving twin (and its FCFS / centralized baselines) on the real pair's traces |
| ``arena`` / ``arena_results`` / ``arena_figures`` | the edge SD arena: combinations on a ``serving.scenario``, one twin run's metrics / results over seeds and the docs/arena.md block / its figures |
| ``arena_capacity`` / ``arena_spotcheck`` | the arena's capacity searches / a few of its points run for real beside the twin (``... arena_spotcheck measure``) |
| ``serving_validation`` | the pinned real runs of tran2025's and li2026's settings (``... serving_validation measure``) and their setups for ``serving.analysis.validation`` |

Layers (``tests/unit/test_layering.py`` checks them): nothing in the library imports this package.
"""
