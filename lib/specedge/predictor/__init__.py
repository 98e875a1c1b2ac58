"""WISP's rejection predictor and its stop-at-first-predicted-rejection drafting controller (li2026).

One module per idea; every public name is importable from ``specedge.predictor`` as before:

| module | what |
|---|---|
| ``dataset`` | traces -> labelled samples (Sec 4.1, App B), features, prompt-level splits, Figs 2-3 views |
| ``metrics`` | Table 4 / Table 10 metrics (scikit-learn), operating point, FPR at equal Rec1 |
| ``intervals`` | prompt-level intervals on Table 4: cluster bootstrap over test prompts, repeated splits |
| ``models`` | the four families (MLP, random forest, XGBoost, LightGBM), grid scan, train_all, evaluate |
| ``operating`` | the paper's operating points (MLP with a class-weighted BCE, every family at 0.5) over split seeds |
| ``waste`` | the trained predictors' wasted drafting: Theorem 1's curves, live rounds, replayed stop rules |
| ``persistence`` | save / load without unpickling code |
| ``theorem1`` | expected wasted drafting in closed form, the bound (31), Monte Carlo |
| ``controller`` | the stop-at-first-predicted-rejection controller, Table 5's ablation, its replay on traces |
| ``traces`` | fixed-window traces of the zoo, zoo prompts, the committed trace files (zoo, real pair) |
| ``latency`` | Table 11's single-sample latency statistics |
| ``cli`` | ``python -m specedge.predictor build / train / latency / realpair`` |

The paper's figures and the rules deciding its claims live with its experiments (``specedge.experiments``).
"""
from .controller import (StopAtFirstPredictedRejection, ablation_over_drafts, controller_ablation, draft_passes,
                         replay_stop_rule, replayed_rounds)
from .dataset import (FEATURES, STATS, binned_acceptance, build_dataset, committed_split, data_splits, dataset_summary,
                      features, pearson_table, split_by_prompt, statistic_views, test_prompts)
from .intervals import bootstrap_metrics, bootstrap_statistic, bootstrap_table, repeated_splits, side_by_side, spread
from .latency import latency_table, measure_latency
from .metrics import accept_all, confusion, fpr_at_rec1, metrics, operating_point, roc_auc
from .models import (FAMILIES, LABELS, SCAN_GRIDS, TRAINERS, Forest, Predictor, evaluate, scan, train_all,
                     train_lightgbm, train_mlp, train_random_forest, train_xgboost)
from .operating import (EQUAL_COL, EQUAL_REC1, UNPENALISED, balanced_weight, evaluate_at_thresholds, fpr_ratio,
                        paper_operating_points, trainer_kwargs)
from .persistence import PREDICTORS, REALPAIR, load, load_realpair, require_committed, save
from .theorem1 import expected_waste, first_rejection_pmf, simulate_waste, waste_bound
from .traces import (REALPAIR_TRACES, TRACE_COLUMNS, TRACES, draft_order, generate_traces, load_realpair_traces, load_trace_data,
                     position_acceptance, zoo_prompts)
from .cli import main

__all__ = [
    "ablation_over_drafts", "evaluate_at_thresholds", "load_realpair", "require_committed", "draft_order",
    "FEATURES", "STATS", "FAMILIES", "build_dataset", "dataset_summary", "split_by_prompt",
    "accept_all", "confusion", "roc_auc", "metrics", "operating_point", "fpr_at_rec1", "Predictor", "train_mlp",
    "train_random_forest", "train_xgboost", "train_lightgbm", "scan", "SCAN_GRIDS", "TRAINERS", "save", "load",
    "Forest", "expected_waste", "waste_bound", "simulate_waste", "StopAtFirstPredictedRejection",
    "measure_latency", "pearson_table", "binned_acceptance", "TRACES", "PREDICTORS", "TRACE_COLUMNS",
    "first_rejection_pmf", "generate_traces", "data_splits", "test_prompts", "position_acceptance",
    "train_all", "evaluate", "latency_table", "controller_ablation", "draft_passes",
    "zoo_prompts", "load_trace_data", "features", "LABELS", "main",
    "bootstrap_metrics", "bootstrap_table", "repeated_splits", "spread", "REALPAIR", "REALPAIR_TRACES",
    "load_realpair_traces", "statistic_views", "replay_stop_rule", "replayed_rounds", "bootstrap_statistic", "side_by_side",
    "committed_split", "EQUAL_COL", "EQUAL_REC1", "UNPENALISED", "balanced_weight", "fpr_ratio", "paper_operating_points", "trainer_kwargs",
]
