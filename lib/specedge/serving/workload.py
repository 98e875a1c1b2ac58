"""Who drafts what: a workload is plain values, so a run is a pure function of it."""
from __future__ import annotations

from dataclasses import dataclass, field, asdict


class DraftRule(str):
    """How a device chooses its draft length, parsed once from its text: ``server`` (the server's allocation S),
    ``fixed`` (always γ) or ``predictor:<model>`` (WISP's stop rule ``model``, drafting at most γ). It is its text
    (compares, hashes and serialises as it: logs, sweep keys and drafter processes see the same string), with its
    ``kind`` and ``model`` read from it; ``DraftRule.of("predictor", "mlp")`` builds one from its parts."""
    KINDS = ("server", "fixed", "predictor")

    def __new__(cls, text: str = "server"):
        if isinstance(text, DraftRule):
            return text
        kind, sep, model = text.partition(":") if isinstance(text, str) else ("", "", "")
        if kind not in cls.KINDS or (kind == "predictor") != bool(model) or (sep and kind != "predictor"):
            raise ValueError(f"draft_rule: expected 'server', 'fixed' or 'predictor:<name>', got {text!r}")
        rule = super().__new__(cls, text)
        rule.kind, rule.model = kind, model
        return rule

    @classmethod
    def of(cls, kind: str, model: str = "") -> "DraftRule":
        return cls(f"{kind}:{model}" if model else kind)

    @property
    def stops(self) -> bool:
        """Whether the device stops drafting by its predictor (WISP), within γ."""
        return self.kind == "predictor"


@dataclass(frozen=True)
class ClientSpec:
    """One edge drafter: its draft model, its prompt stream and its draft-length rule.

    ``domains`` is the client's prompt stream in order: with more than one domain its prompts
    switch domain over time (GOODSPEED's non-stationary acceptance). ``draft_rule`` (a ``DraftRule``, given
    as its text) is ``"server"`` (use the server's allocation S), ``"fixed"`` (always ``gamma``) or
    ``"predictor:<name>"`` (WISP's stop rule, drafting at most ``gamma``).
    """
    draft: str = "draft-xs"
    domains: tuple[str, ...] = ("code",)
    prompts: int = 2                 # prompts per domain, generated one after another
    max_new_tokens: int = 50
    gamma: int = 4
    draft_rule: DraftRule = "server"
    temperature: float = 0.0
    slo_class: int | None = None     # WISP token-speed class (tok/s)
    alpha: float | None = None       # WISP eq (5): the acceptance rate the device reports (g = alpha * N_d)
    prompt_tokens: int | tuple[int, ...] = 0   # twin: prompt length fed by a session's first verification (0: not
    #                                            modelled), or one per prompt of its stream in order (repeated past its end)
    seed: int = 0

    def __post_init__(self):
        object.__setattr__(self, "draft_rule", DraftRule(self.draft_rule))    # parsed once, checked on construction
        if isinstance(self.prompt_tokens, (tuple, list)):
            if not self.prompt_tokens or any(int(t) != t or t < 0 for t in self.prompt_tokens):
                raise ValueError(f"prompt_tokens: one count >= 0 per prompt, got {self.prompt_tokens!r}")
            object.__setattr__(self, "prompt_tokens", tuple(int(t) for t in self.prompt_tokens))


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


def switching(target: str, drafts, clients: int, capacity: int, max_new_tokens: int, domains, *, prompts: int = 1,
              temperature: float = 0.0, seed: int = 0) -> Workload:
    """``clients`` clients whose prompts switch domain half-way (GOODSPEED's non-stationary acceptance): client i
    drafts with ``drafts[i % len(drafts)]`` on ``domains`` i and i + len(domains) // 2 (mod len), in that order,
    ``prompts`` prompts of each."""
    n, drafts = len(domains), tuple(drafts)
    if not drafts or n < 2:
        raise ValueError(f"drafts, domains: need a draft and two domains at least, got {drafts!r}, {tuple(domains)!r}")
    return Workload(target, tuple(ClientSpec(drafts[i % len(drafts)], (domains[i % n], domains[(i + n // 2) % n]), prompts,
                                             max_new_tokens, temperature=temperature, seed=seed) for i in range(clients)),
                    capacity=capacity)
