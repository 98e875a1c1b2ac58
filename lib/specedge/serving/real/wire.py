"""The generated gRPC code of ``wire.proto``, and how to regenerate it.

``python -m specedge.serving.real.wire`` rewrites ``wire_pb2.py`` and ``wire_pb2_grpc.py`` next to the
.proto (grpcio-tools, a dev dependency); ``tests/processes/test_serving_real.py`` checks the committed files are
what regeneration gives.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
PROTO = HERE / "wire.proto"
GENERATED = ("wire_pb2.py", "wire_pb2_grpc.py")


def regenerate(out_dir: Path = HERE) -> list[Path]:
    """Run protoc on wire.proto into ``out_dir``; the grpc module imports its sibling by package."""
    from grpc_tools import protoc

    out_dir = Path(out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        rc = protoc.main(["grpc_tools.protoc", f"-I{HERE}", f"--python_out={tmp}",
                          f"--grpc_python_out={tmp}", str(PROTO)])
        if rc != 0:
            raise RuntimeError(f"protoc failed on {PROTO} (exit {rc})")
        written = []
        for name in GENERATED:
            text = (Path(tmp) / name).read_text()
            # protoc writes `import wire_pb2`; make it relative so the package imports it.
            text = text.replace("import wire_pb2 as wire__pb2", "from . import wire_pb2 as wire__pb2")
            (out_dir / name).write_text(text)
            written.append(out_dir / name)
    return written


if __name__ == "__main__":
    for path in regenerate():
        print(f"wrote {path}")
    sys.exit(0)
