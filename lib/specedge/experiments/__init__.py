"""Experiment drivers: what the notebooks call on top of the algorithms (``solvers``) and the systems
(``serving``, ``predictor``, ``early_exit``) — sweeps, verdicts and the measuring steps that write data/.

One folder per paper (the keys of data/papers.yaml), plus the twin's validation against real runs:

| folder | modules: what |
|---|---|
| ``zhu2025`` | ``runs`` / ``figures``: Edge-SD's Table II from a profile and its sweeps / its figures and comparison rows |
| ``zheng2025`` | ``figures``: TK-SLT's figures and comparison rows (Tables I-II, Figs 2-4, zoo and real pair, both cost sources); ``measure`` (``python -m specedge.experiments.zheng2025.measure measure``): zoo pass times -> a profile |
| ``venkatesha2025`` | ``tables`` / ``figures`` / ``runs``: FSD's comparison rows (Tables 1-9, Figs 4, 6) / Fig 6 (eq 9 heatmaps) / the zoo runs behind Table 6; ``realpair`` (``make realpair-exits``): early-exit adapters, exit traces and timings on the real pair, and its rows; ``measure`` (``python -m specedge.experiments.venkatesha2025.measure``): Table 5/9 timings, concurrent run |
| ``tran2025`` | ``runs`` / ``figures``: GOODSPEED's twin experiments and its real gRPC runs (``... tran2025.runs measure``) / its figures and comparison rows |
| ``li2026`` | ``serving_runs``: WISP's serving experiments on the twin (Tables 1-3, Figs 5-8) and their calibration on Table 3; ``serving_figures`` / ``serving_heldout`` / ``serving_mechanisms`` / ``estimator_figures``: its serving rows (Tables 1-3, 6, Figs 7-8), held-out statements, measured mechanisms / the verification estimator's rows (Fig 4, Tables 7, 12, Figs 9, 11); ``real`` (``... li2026.real measure``): WISP's and centralized serving's real runs; ``realpair``: WISP's serving twin on the real pair's traces; ``drafting`` / ``drafting_waste`` / ``device_goodput``: the predictor's accuracy rows (Tables 4, 8, 10, 11, Figs 2-3) / wasted-drafting rows (Theorem 1, Table 5, Fig 1) / Fig 1's modelled device goodput |
| ``edge_sd_arena`` | ``runs`` / ``results`` / ``figures``: the edge SD arena: combinations on a ``serving.scenario``, one twin run's metrics / results over seeds and the docs/arena.md block / its figures; ``capacity`` / ``spotcheck``: its capacity searches / a few of its points run for real beside the twin (``... edge_sd_arena.spotcheck measure``) |
| ``model_zoo`` | ``realpair_card`` (``python -m specedge.experiments.model_zoo.realpair_card``): the real pair's acceptance card -> data/realpair/; ``realpair_twin``: its traces and workload as the serving twins' input; ``realpair_gamma``: which γ wins per domain; ``realpair_readme``: docs/real-pair.md's tables from the committed files |
| ``serving_validation`` | ``runs``: the pinned real runs of tran2025's and li2026's settings (``... serving_validation.runs measure``) and their setups for ``serving.analysis.validation``; ``realpair`` (``python -m specedge.experiments.serving_validation.realpair``): the real serving system on the real pair, and its replay |

Layers (``tests/unit/test_layering.py`` checks them): nothing in the library imports this package.
"""
