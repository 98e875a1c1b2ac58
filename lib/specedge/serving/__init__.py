"""One verification server for many edge drafters: real processes over gRPC, and a SimPy twin.

Layout (Vidur's split: policies with no I/O, a runtime model, the things that flow):

- ``interfaces``  what flows and the two policy protocols: ``Pending`` (a verification request as a
  scheduler sees it), ``Outcome`` (what one verification gave a client), ``BatchFormer`` (which
  queued requests go into the next forward pass), ``DraftAllocator`` (S(t+1) for every client),
  ``VerifyTimeModel`` (seconds for one batched verification), ``LOG_COLUMNS`` (the per-round log
  that the real run and the twin both write, so one set of metric definitions serves both).
- ``workload``    ``ClientSpec`` / ``Workload``: who drafts what, with which model, for how long.
- ``batching``    batch formers: ``SyncRounds`` (GOODSPEED: wait for every active client), ``FCFS``.
- ``allocation``  draft allocators: ``GoodspeedAllocator`` (Algorithm 1, eqs 3-5), ``FixedS``,
  ``RandomS``.
- ``slo_weighted_allocation`` / ``as2_allocation``  allocators written from outside: GOODSPEED weighted by SLO
  class (the arena's plug-in), zheng2025's AS² per client.
- ``metrics``     metrics of a log defined nowhere else: Jain's index, tokens per pass, uplink bytes per token.
- ``wire.proto``  the single definition of the messages (``wire_pb2*.py`` generated from it).
- ``verifier``    the target model, per-session prefix caches, batched verification in one pass.
- ``codec``       the wire codec both sides use: ``Request``/``Result`` <-> messages, every received
  field validated (the drafter never imports the server).
- ``server`` / ``drafter`` / ``run``  the real multi-process system on 127.0.0.1 by default
  (``python -m specedge.serving``).
- ``twin``        the discrete-event twin running the same policy objects (SimPy's event order, a plain heap).

Schedulers hold no clock and do no I/O: the server and the twin pass ``now`` in, so the same object
runs unchanged in both (a test passes one object to both).
"""
