"""serving_validation: its runs, rows and figures."""
