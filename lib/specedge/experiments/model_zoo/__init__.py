"""model_zoo: its runs, rows and figures."""
