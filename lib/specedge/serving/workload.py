"""Who drafts what: a workload is plain values, so a run is a pure function of it."""
from __future__ import annotations

from dataclasses import dataclass, field, asdict


@dataclass(frozen=True)
class ClientSpec:
    """One edge drafter: its draft model, its prompt stream and its draft-length rule.

    ``domains`` is the client's prompt stream in order: with more than one domain its prompts
    switch domain over time (GOODSPEED's non-stationary acceptance). ``draft_rule`` is
    ``"server"`` (use the server's allocation S), ``"fixed"`` (always ``gamma``) or
    ``"predictor:<name>"`` (WISP's stop rule, drafting at most ``gamma``).
    """
    draft: str = "draft-xs"
    domains: tuple[str, ...] = ("code",)
    prompts: int = 2                 # prompts per domain, generated one after another
    max_new_tokens: int = 50
    gamma: int = 4
    draft_rule: str = "server"
    temperature: float = 0.0
    slo_class: int | None = None     # WISP token-speed class (tok/s)
    alpha: float | None = None       # WISP eq (5): the acceptance rate the device reports (g = alpha * N_d)
    prompt_tokens: int = 0           # twin: prompt length fed by a session's first verification (0: not modelled)
    seed: int = 0


@dataclass(frozen=True)
class Workload:
    """One verification server (target model) and its clients."""
    target: str = "target-m"
    clients: tuple[ClientSpec, ...] = field(default_factory=lambda: (ClientSpec(),))
    capacity: int = 8                # C: draft tokens per forward pass, summed over clients
    cache: bool = True               # False: recompute the whole prefix every verification (SLED)
    top_k: int | None = None         # TK-SLT sparse draft distributions on the wire (None: dense)
    kv_bytes_per_token: float = 0.0  # twin: KV-cache bytes per cached token (WISP eq 14's m_i)

    def to_dict(self) -> dict:
        return asdict(self)
