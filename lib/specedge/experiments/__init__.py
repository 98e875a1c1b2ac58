"""Experiment drivers: what the notebooks call on top of the algorithms (``solvers``) and the systems
(``serving``, ``predictor``, ``early_exit``) — sweeps, verdicts and the measuring steps that write data/.

One folder per paper (the keys of data/papers.yaml), plus the twin's validation against real runs:

| folder | modules: what |
|---|---|
| ``zhu2025`` | ``runs`` / ``figures``: Edge-SD's Table II from a profile and its sweeps / its figures and comparison rows |
| ``zheng2025`` | ``figures``: TK-SLT's figures and comparison rows (Tables I-II, Figs 2-4, zoo and real pair, both cost sources); ``measure`` (``python -m specedge.experiments.zheng2025.measure measure``): zoo pass times -> a profile |
| ``venkatesha2025`` | ``tables`` / ``figures`` / ``runs``: FSD's comparison rows (Tables 1-9, Figs 4, 6) / Figs 4a, 4b, 6 and the exits' agreement / the zoo runs behind Table 6; ``verdicts``: the rules deciding the FSD simulation's claims; ``realpair`` (``make realpair-exits``): early-exit adapters, exit traces and timings on the real pair; ``measure`` (``python -m specedge.experiments.venkatesha2025.measure``): Table 5/9 timings, concurrent run |
| ``tran2025`` | ``runs`` / ``figures``: GOODSPEED's twin experiments and its real gRPC runs (``python -m specedge.experiments.tran2025.runs measure``) / its figures and comparison rows |
| ``li2026`` | ``serving_runs``: WISP's serving experiments on the twin (Tables 1-3, Figs 5-8) and their calibration on Table 3; ``serving_figures`` / ``serving_heldout`` / ``serving_mechanisms``: its serving rows; ``estimator_figures``: the verification estimator's figures and rows (Fig 4, Tables 7, 12, Figs 9, 11); ``drafting`` / ``drafting_waste`` / ``drafting_verdicts`` / ``drafting_figures``: WISP's predictor; ``device_goodput``: Fig 1; ``real`` (``python -m specedge.experiments.li2026.real measure``): WISP's and centralized serving's real runs; ``realpair``: WISP's serving twin on the real pair's traces |
| ``model_zoo`` | ``realpair_card`` (``python -m specedge.experiments.model_zoo.realpair_card``): the real pair's acceptance card -> data/realpair/; ``realpair_gamma`` (``python -m specedge.experiments.model_zoo.realpair_gamma``): which γ wins per domain on the real pair |
| ``edge_sd_arena`` | ``runs`` / ``results`` / ``figures``: the edge SD arena's combinations on a ``serving.scenario``, one twin run's metrics / results over seeds / its figures; ``capacity``: its capacity searches; ``spotcheck`` (``python -m specedge.experiments.edge_sd_arena.spotcheck measure``): a few of its points run for real beside the twin |
| ``serving_validation`` | ``runs`` (``python -m specedge.experiments.serving_validation.runs measure``): the pinned real runs of tran2025's and li2026's settings, their devices and setups for ``serving.analysis.validation``; ``realpair`` (``python -m specedge.experiments.serving_validation.realpair``): the real serving system on the real pair, and its replay; ``twin_verdicts``: tran2025's and li2026's serving rows judged against the twin's validated error (``serving.analysis.twin_error``) |

A paper's folder imports its own modules and ``serving_validation``'s, never another paper's folder, and
``serving_validation`` imports no paper's folder: what two papers share lives in ``serving_validation``, a scenario
file or a lower layer (``tests/unit/test_layering.py`` checks it).

Layers (``tests/unit/test_layering.py`` checks them): nothing in the library imports this package.
"""
