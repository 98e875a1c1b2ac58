"""``python -m specedge.predictor build|train|latency`` (``cli``)."""
import sys

from .cli import main

sys.exit(main())
