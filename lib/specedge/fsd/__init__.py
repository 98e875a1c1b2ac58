"""venkatesha2025's FSD (fast speculative decoding with early exits): ``sim`` (the pre-drafting client
and early-exit server as a SimPy discrete-event model), ``concurrent`` (the same protocol run for real
with threads, queues and injected delays) and ``measure`` (this machine's timings, written to data/)."""
