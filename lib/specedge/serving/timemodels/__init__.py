"""Time models of the serving systems: verification runtime models, the verification estimator (li2026 eq 19)
and its diagnostics, device time models, shape scaling, calibration, and times fitted to real runs."""
