"""One module per check, named by its slug; discovered by diagnostics.registry in sorted order."""
