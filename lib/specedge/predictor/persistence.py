"""Saving and loading predictors without unpickling code (li2026): safetensors + JSON for the MLP,
XGBoost's JSON, LightGBM's text model, the random forest's tree arrays in safetensors (``models.Forest``).
The committed predictors live in ``PREDICTORS`` (``data/predictor``).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from safetensors.numpy import load_file as _np_load, save_file as _np_save
from safetensors.torch import load_file as _torch_load, save_file as _torch_save

from .. import paths
from .models import FAMILIES, Forest, Predictor, _MLP
from .traces import REALPAIR_TRACES, TRACES, load_realpair_traces

PREDICTORS = paths.DATA / "predictor"
REALPAIR = PREDICTORS / "realpair"   # the four families retrained on the real pair's traces (``cli realpair``)


# --------------------------------------------------------------------------- save / load
def save(pred: Predictor, directory, name: str | None = None) -> Path:
    """Write ``<name>.json`` (family, features, threshold, params) plus the model in its own format."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    name = name or pred.family
    meta = dict(family=pred.family, features=list(pred.features), threshold=pred.threshold,
                params=pred.params)
    if pred.family == "mlp":
        meta["model_file"] = f"{name}.safetensors"
        meta["architecture"] = dict(n_in=len(pred.features), hidden=pred.params["hidden"],
                                    dropout=pred.params.get("dropout", 0.0))
        _torch_save({k: v.contiguous() for k, v in pred.model.state_dict().items()},
                    str(directory / meta["model_file"]))
    elif pred.family == "random_forest":
        forest = pred.model if isinstance(pred.model, Forest) else Forest.from_sklearn(pred.model)
        meta["model_file"] = f"{name}.safetensors"
        _np_save(forest.arrays(), str(directory / meta["model_file"]))
    elif pred.family == "xgboost":
        meta["model_file"] = f"{name}.xgb.json"
        pred.model.save_model(str(directory / meta["model_file"]))
    elif pred.family == "lightgbm":
        meta["model_file"] = f"{name}.lgb.txt"
        pred.model.save_model(str(directory / meta["model_file"]))
    else:
        raise ValueError(f"family must be one of {FAMILIES}, got {pred.family!r}")
    path = directory / f"{name}.json"
    path.write_text(json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n")
    return path


def load(directory, name: str) -> Predictor:
    """Load a predictor written by ``save``; nothing is unpickled."""
    directory = Path(directory)
    meta = json.loads((directory / f"{name}.json").read_text())
    family, file = meta["family"], directory / meta["model_file"]
    if family == "mlp":
        arch = meta["architecture"]
        model = _MLP(arch["n_in"], arch["hidden"], arch["dropout"])
        model.load_state_dict(_torch_load(str(file)))
        model.eval()
    elif family == "random_forest":
        model = Forest.from_arrays(_np_load(str(file)))
    elif family == "xgboost":
        import xgboost as xgb

        model = xgb.Booster(params={"nthread": 1})
        model.load_model(str(file))
    elif family == "lightgbm":
        import lightgbm as lgb

        model = lgb.Booster(model_file=str(file))
    else:
        raise ValueError(f"{file}: family must be one of {FAMILIES}, got {family!r}")
    return Predictor(family, model, meta["params"], float(meta["threshold"]), tuple(meta["features"]))


def require_committed() -> dict:
    """The committed zoo traces, predictors and zoo a predictor user needs (`make zoo` builds them; missing is an
    error); returns the predictors' ``meta.json``."""
    for need in (PREDICTORS / "meta.json", TRACES / "li2026_traces.csv.gz", paths.ZOO / "target-m" / "card.json"):
        if not need.exists():
            raise FileNotFoundError(f"{need} is missing: `make zoo` builds it (python -m specedge.zoo build; "
                                    "python -m specedge.predictor build)")
    return json.loads((PREDICTORS / "meta.json").read_text())


def load_realpair():
    """The real pair's predictors' ``meta.json`` and its committed traces; an error names the
    command that trains the predictors when they are missing or older than the traces."""
    need = [REALPAIR / n for n in ("meta.json", "repeated_splits.csv", *(f"{f}.json" for f in FAMILIES))]
    missing = [str(n.relative_to(paths.ROOT)) for n in need if not n.exists()]
    if missing:
        raise FileNotFoundError(f"{missing} missing: `python -m specedge.predictor realpair` trains them from "
                                f"{REALPAIR_TRACES.relative_to(paths.ROOT)}")
    meta = json.loads((REALPAIR / "meta.json").read_text())
    if hashlib.sha256(REALPAIR_TRACES.read_bytes()).hexdigest() != meta["traces_sha256"]:
        raise ValueError(f"{REALPAIR_TRACES.relative_to(paths.ROOT)} changed since data/predictor/realpair was trained: "
                         "rerun `python -m specedge.predictor realpair`")
    return meta, load_realpair_traces()
