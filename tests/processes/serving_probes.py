"""What the serving tests in tests/processes share: raw wire requests, greedy references, one-off servers
on a loaded target and the CLI as subprocesses (loopback only; whoever starts a server stops it)."""
from __future__ import annotations

import os
import sys

import grpc

from specedge import decoding, zoo
from specedge.serving.real import wire_pb2 as pb
from specedge.serving.real import wire_pb2_grpc as pb_grpc
from specedge.serving.policies.allocation import FixedS
from specedge.serving.policies.batching import FCFS
from specedge.serving.real.drafter import prompt_stream
from specedge.serving.real.server import VerificationServer
from specedge.serving.real.verifier import Verifier

VOCAB = 8192


def request(client, token, session, n_draft=2, temperature=0.0, probs=None, new=(1, 2, 3), round=0, **kw):
    msg = pb.VerifyRequest(session=session, client=client, token=token, new_tokens=list(new),
                           draft_ids=[5] * n_draft, temperature=temperature, round=round, **kw)
    if probs is not None:
        msg.draft.CopyFrom(pb.DraftDistribution(vocab_size=VOCAB, probs=probs))
    return msg


def verify_round(stub, c, tok, session, rnd, new, n_draft=1, **kw):
    return stub.Verify(request(c, tok, session, n_draft, new=new, round=rnd, **kw), timeout=30)


def reference(target, spec):
    """Single-process greedy decoding of ``spec``'s prompts: what every honest drafter must get."""
    return [decoding.autoregressive(target, p, spec.max_new_tokens).tokens.tolist()
            for p in prompt_stream(spec, zoo.load_tokenizer())]


class Servers:
    """One-off servers on a shared target (each with its own policies and options), all stopped by ``close``."""

    def __init__(self, target):
        self.target, self.made = target, []

    def __call__(self, clients=(0, 1, 2), former=None, allocator=None, **kw):
        kw = dict(dict(client_timeout=600, idle_timeout=600, stop_when_done=False, start_barrier=False), **kw)
        server = VerificationServer(Verifier(self.target), former or FCFS(),
                                    allocator or FixedS(2 * len(clients), len(clients)), list(clients),
                                    label="one-off", **kw)
        port = server.start(0)
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.made.append((server, channel))
        return server, pb_grpc.VerifierStub(channel)

    def close(self):
        for server, channel in self.made:
            channel.close()
            server.stop()


def cli(*args):
    return [sys.executable, "-m", "specedge.serving", *map(str, args)]


def env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OMP_NUM_THREADS="1")


def stop(proc):
    """Stop a process this test started (by its handle) if it is still running."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


def served(line: str) -> tuple[int, str]:
    """(port, key) from the server CLI's first line ("verification server on 127.0.0.1:PORT (...; key in PATH)")."""
    port = int(line.split("127.0.0.1:")[1].split()[0])
    path = line.split("key in ")[1].split(")")[0]
    with open(path) as fh:
        return port, fh.read().strip()


def server_cli(tmp_path, *args):
    """The server command on a free port with a log in ``tmp_path`` (``args``: more flags) as a subprocess;
    returns (process, port, key) once it listens. The caller stops it (``stop``)."""
    import subprocess
    proc = subprocess.Popen(cli("server", "--port", 0, "--capacity", 2, "--out", tmp_path / "s.csv", *args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    try:
        port, key = served(proc.stdout.readline())
    except (IndexError, ValueError):
        stop(proc)
        raise
    return proc, port, key
