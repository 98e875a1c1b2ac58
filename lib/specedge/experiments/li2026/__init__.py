"""li2026: its runs, rows and figures."""
