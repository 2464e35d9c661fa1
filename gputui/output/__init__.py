"""Views shared by the CLI, the TUI and bundles: human text and versioned JSON."""
