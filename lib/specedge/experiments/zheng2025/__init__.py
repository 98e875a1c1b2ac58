"""zheng2025: its runs, rows and figures."""
