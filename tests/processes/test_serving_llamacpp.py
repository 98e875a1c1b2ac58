"""The real multi-process run with llama.cpp drafters (``run_real(draft_gguf=)``): a zoo draft written as a GGUF
file drafts in every drafter process against the transformers zoo target in the server, and every client's tokens
are the target's greedy AR. Needs llama-cpp-python (``make llamacpp``) and ``gguf``: skipped with the reason
without them, failed instead in ``make test-llamacpp`` (``SPECEDGE_LLAMACPP=required``)."""
from __future__ import annotations

import importlib.util
import os

import pytest
import torch

from specedge import decoding, gguf_files, llamacpp, zoo
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import SyncRounds
from specedge.serving.log import verified
from specedge.serving.real.drafter import prompt_stream
from specedge.serving.real.run import run_real
from specedge.serving.workload import ClientSpec, Workload

pytestmark = pytest.mark.skipif(
    os.environ.get("SPECEDGE_LLAMACPP") != "required" and not (llamacpp.available() and importlib.util.find_spec("gguf")),
    reason=llamacpp.MISSING + " (and the gguf package)")


def test_llamacpp_drafter_processes_emit_the_targets_greedy_tokens(tmp_path):
    """The GGUF file is another zoo draft (draft-s) than the clients name (draft-xs, whose tokenizer the zoo shares):
    every round's verdict must be the one draft-s on llama.cpp gets in process, so a drafter that ignored the file
    (and drafted with draft-xs on transformers) fails here even though its tokens would be exact too."""
    from specedge.llamacpp import drafter_lm
    from specedge.serving.real.drafter import PROMPT_TOKENS, Drafter
    from specedge.serving.real.verifier import Verifier

    gguf = gguf_files.write_llama_gguf(zoo.load_model("draft-s"), tmp_path / "draft-s.gguf")
    wl = Workload("target-m", (ClientSpec("draft-xs", ("code",), 2, 12), ClientSpec("draft-xs", ("sql",), 1, 10)),
                  capacity=6)
    log, outputs = run_real(wl, SyncRounds(), FixedS(6, 2), label="llamacpp", draft_gguf=gguf)
    ok = verified(log)
    assert (log.event == "").all() and (ok.t_draft_cpu > 0).all()
    target = zoo.load_model("target-m")
    lm = drafter_lm(gguf, 12, PROMPT_TOKENS)
    for c, spec in enumerate(wl.clients):
        want, verdicts = [], []
        for k, p in enumerate(prompt_stream(spec)):
            want.append(decoding.autoregressive(target, torch.tensor(p), spec.max_new_tokens).tokens.tolist())
            d, verifier = Drafter(lm, p, spec.max_new_tokens, f"s{k}"), Verifier(target)
            while not d.done:
                req, _ = d.propose(3)
                res = verifier.verify([req])[0]
                verdicts.append((len(req.draft_ids), res.accepted))
                d.commit(res)
        assert outputs[c] == want, c
        mine = ok[ok.client == c].sort_values("round")
        assert list(zip(mine.S.astype(int), mine.accepted.astype(int))) == verdicts, c
    assert ok.accepted.sum() > 0
