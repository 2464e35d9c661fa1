"""The Textual TUI: a live client of the same Store, Snapshot and diagnostics the CLI uses."""
