"""Widgets shared by the screens: keyed tables, the status line, the evidence panel, the filter bar."""
