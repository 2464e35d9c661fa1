"""Which cluster gputui talks to, read from kubeconfig files the way kubectl reads them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from gputui.kube.api import ConfigError, load


def _kubeconfig(path: Path, context: str, server: str, current: bool = True, namespace: str = "") -> Path:
    ctx: dict[str, str] = {"cluster": context, "user": context}
    if namespace:
        ctx["namespace"] = namespace
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": context, "cluster": {"server": server}}],
           "users": [{"name": context, "user": {"token": "t"}}],
           "contexts": [{"name": context, "context": ctx}]}
    if current:
        doc["current-context"] = context
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_every_file_of_a_kubeconfig_list_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _kubeconfig(tmp_path / "a", "prod", "https://prod.example:6443", namespace="ml")
    b = _kubeconfig(tmp_path / "b", "staging", "https://staging.example:6443")
    # A missing first file is skipped, as kubectl does.
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{b}")
    _, info = load()
    assert (info.context, info.server) == ("staging", "https://staging.example:6443")
    # A context from the second file; the first file's current-context wins (kubectl's rule).
    monkeypatch.setenv("KUBECONFIG", f"{a}:{b}")
    assert load(context="staging")[1].context == "staging"
    _, info = load()
    assert (info.context, info.namespace) == ("prod", "ml")
    with pytest.raises(ConfigError, match="context 'nope' not found"):
        load(context="nope")


def test_a_failing_credential_plugin_is_said_not_swallowed(tmp_path: Path) -> None:
    # `aws eks get-token` without AWS credentials: the client only logs it and sends no credentials,
    # so every request would look like missing RBAC.
    plugin = tmp_path / "get_token.py"
    plugin.write_text('import sys\nprint("Unable to locate credentials.", file=sys.stderr)\nsys.exit(255)\n',
                      encoding="utf-8")
    kc = _kubeconfig(tmp_path / "eks", "eks", "https://eks.example:443")
    doc = yaml.safe_load(kc.read_text(encoding="utf-8"))
    doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                        "command": sys.executable, "args": [str(plugin)]}}
    kc.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ConfigError, match="credential plugin failed: .*Unable to locate credentials"):
        load(str(kc))
