"""``python -m specedge.early_exit build`` (``main``): the zoo targets' early-exit adapters."""
import sys

from . import main

sys.exit(main())
