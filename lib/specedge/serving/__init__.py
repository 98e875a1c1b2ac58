"""One verification server for many edge drafters: real processes over gRPC, and a twin on an event engine.

Layout (Vidur's split: policies with no I/O, a runtime model, the things that flow), wings over one ground
(``tests/unit/test_layering.py`` states the order: a wing imports the ground and the wings below it only):

- the ground, here: ``interfaces`` (what flows and the two policy protocols: ``Pending``, ``Outcome``,
  ``BatchFormer``, ``DraftAllocator``, ``VerifyTimeModel``, the step times ``Times``, and ``LogRow``, a row of the
  per-round log that the real run and the twin both write, its fields the log's columns ``LOG_COLUMNS``, so one set
  of metric definitions serves both), ``log`` (the log of rows, ``frame``, and its readers every wing shares:
  ``verified``, ``real_rounds``, ``parse_batch``, ...),
  ``workload`` (``ClientSpec`` / ``Workload``: who drafts what, with which model, for how long), ``slo``,
  ``timegrid``.
- ``timemodels/``  verification runtime models (``runtime``), the verification estimator (``estimator``, li2026
  eq 19) and its diagnostics, device time models (``time_models``), ``shape_scaling``, ``calibration``, and
  times fitted to real runs (``measured_times``).
- ``policies/``    batch formers (``batching``: ``SyncRounds``, ``FCFS``; ``wisp_batching``), draft allocators
  (``allocation``: ``GoodspeedAllocator``, Algorithm 1, eqs 3-5, ``FixedS``, ``RandomS``; ``slo_weighted_allocation``
  and ``as2_allocation``, written from outside), and the lookup of every policy and runtime model by name
  (the package itself: ``policies.build``).
- ``sim/``         the event engine (``engine``), the client and server processes (``processes``), the twin
  (``twin``), the replay of a real run (``replay``), centralized serving (``centralized``), ``twin_vectorised``.
- ``real/``        the wire (``wire.proto``, ``wire_pb2*.py`` generated from it), the codec both sides use
  (``codec``: every received field validated; the drafter never imports the server), the target model's
  verifier (``verifier``), ``server`` / ``drafter`` / ``run``: the real multi-process system on 127.0.0.1 by
  default (``python -m specedge.serving``), committed real-run logs (``real_logs``), ``verify_profiling``.
- ``analysis/``    metrics of a log defined nowhere else (``metrics``), capacity searches, per-round series,
  client mixes, and the twin's validation against real runs (``validation``, ``twin_error``, ``twin_attribution``).
- on top: the command line (``__main__``) and the scenario files' reader (``scenario``).

Schedulers hold no clock and do no I/O: the server and the twin pass ``now`` in, so the same object
runs unchanged in both (a test passes one object to both).
"""
