"""edge_sd_arena: its runs, rows and figures."""
