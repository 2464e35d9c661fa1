"""Session-wide test setup: the tests talk to 127.0.0.1 only; AWS never dials instance metadata."""

from __future__ import annotations

import os

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.pop("GPUTUI_NOW", None)
