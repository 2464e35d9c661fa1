"""Session-wide test setup: the tests talk to 127.0.0.1 only; AWS never dials instance metadata."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.pop("GPUTUI_NOW", None)

# Endpoints a developer's shell (or an in-process `gputui demo`) may point at: tests choose their own.
_ENDPOINT_VARS = ("GPUTUI_PROMETHEUS_URL", "GPUTUI_PROMETHEUS_TOKEN", "GPUTUI_PROMETHEUS_USER",
                  "GPUTUI_PROMETHEUS_PASSWORD")


@pytest.fixture(autouse=True)
def _isolated_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in _ENDPOINT_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
