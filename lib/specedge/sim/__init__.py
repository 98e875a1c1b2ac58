"""Simulation of distributed speculative decoding: ``fsd`` (venkatesha2025's pre-drafting client and
early-exit server as a SimPy discrete-event model) and ``concurrent`` (the same protocol run for real
with threads, queues and injected delays)."""
