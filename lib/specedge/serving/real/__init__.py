"""The real serving system: the gRPC verification server, the drafters and their runs, the verifier, the wire
codec and its messages, and the committed logs of real runs."""
