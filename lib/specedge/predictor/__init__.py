"""WISP's rejection predictor and its stop-at-first-predicted-rejection drafting controller (li2026).

One module per idea; each name is imported from the module it lives in (``from specedge.predictor.dataset
import build_dataset``):

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
