"""Session-wide test setup: the tests talk to 127.0.0.1 only; AWS never dials instance metadata."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.pop("GPUTUI_NOW", None)

# Endpoints a developer's shell (or an in-process `gputui demo`) may point at: tests choose their own.
_ENDPOINT_VARS = ("GPUTUI_PROMETHEUS_URL", "GPUTUI_PROMETHEUS_TOKEN", "GPUTUI_PROMETHEUS_USER",
                  "GPUTUI_PROMETHEUS_PASSWORD")


# A developer's real AWS credentials must never be used by a test: the CLI tests would call EC2.
_AWS_VARS = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
             "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
             "AWS_ENDPOINT_URL_EC2")


@pytest.fixture(autouse=True)
def _isolated_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in _ENDPOINT_VARS + _AWS_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/gputui-tests/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/gputui-tests/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
