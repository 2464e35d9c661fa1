"""Diagnostic bundles: export a redacted, self-describing .tar.gz for a ticket, and reopen it offline.

`gputui.bundle.write.export_bundle` collects and writes; `gputui.bundle.read.open_bundle` reads one back
into a Snapshot so the same checks run offline. Submodules are imported lazily by their callers.
"""
