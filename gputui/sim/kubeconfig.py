"""Kubeconfig files pointing at a simulator, written atomically so readers never see half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

DEFAULT_TOKEN = "gputui-sim-token"


def kubeconfig_dict(server: str, *, context: str = "gputui-sim", token: str = DEFAULT_TOKEN,
                    namespace: str = "default") -> dict[str, Any]:
    """A one-cluster, one-user kubeconfig the official client and kubectl both accept."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server}}],
        "users": [{"name": context, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(path: str | os.PathLike[str], server: str, *, context: str = "gputui-sim",
                     token: str = DEFAULT_TOKEN, namespace: str = "default") -> Path:
    """Write the kubeconfig to `path` (temp file in the same directory, then rename); mode 0600."""
    from gputui.output.files import refuse_non_regular

    target = Path(path)
    refuse_non_regular(target)  # `--kubeconfig-out /dev/null` must not rename a file over the device
    target.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig_dict(server, context=context, token=token, namespace=namespace),
                          sort_keys=False)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
