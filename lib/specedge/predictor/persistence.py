"""Saving and loading predictors without unpickling code (li2026): safetensors + JSON for the MLP,
XGBoost's JSON, LightGBM's text model, the random forest's tree arrays in safetensors (``models.Forest``).
The committed predictors live in ``PREDICTORS`` (``data/predictor``).
"""
from __future__ import annotations

import json
from pathlib import Path

from safetensors.numpy import load_file as _np_load, save_file as _np_save
from safetensors.torch import load_file as _torch_load, save_file as _torch_save

from .. import paths
from .models import FAMILIES, Forest, Predictor, _MLP

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
