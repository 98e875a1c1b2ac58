"""The keyword a model's forward takes its KV cache by: transformers 5.24 renamed ``past_key_values`` to ``cache``
(the old name still works there, with a FutureWarning, until 5.40). ``cache_kw(model, cache)`` gives the keyword
argument for the installed version, decided once per model class from its forward's signature, so the code runs
without warnings on either side of the rename (pyproject allows transformers 5.x)."""
from __future__ import annotations

import inspect

_NAMES: dict[type, str] = {}


def cache_kw(model, cache) -> dict:
    """``{"cache": cache}`` where ``model``'s forward takes ``cache``, else ``{"past_key_values": cache}``."""
    cls = type(model)
    name = _NAMES.get(cls)
    if name is None:
        name = _NAMES[cls] = "cache" if "cache" in inspect.signature(cls.forward).parameters else "past_key_values"
    return {name: cache}
