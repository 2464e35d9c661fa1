"""Which Karpenter log lines a bundle keeps: those naming the affected objects, by Karpenter's structured keys."""

from __future__ import annotations

import json

from gputui.bundle.logs import KarpenterFilter

NAMES = {"Node": {"ip-10-0-45-211.ec2.internal"}, "NodeClaim": {"gpu-finetune-7xk2q"}, "NodePool": {"gpu"},
         "EC2NodeClass": {"gpu"}, "Pod": {"ml/llama3-lora-sft-0-h7x2k"}}


def line(**fields: object) -> str:
    return json.dumps({"level": "INFO", "time": "2026-08-21T09:12:55.210Z", "logger": "controller", **fields})


def test_lines_naming_affected_objects_are_kept() -> None:
    f = KarpenterFilter(NAMES, errors_too=False)
    assert f.keep(line(message="created nodeclaim", NodeClaim={"name": "gpu-finetune-7xk2q"}))
    assert f.keep(line(message="found provisionable pod(s)", Pods="ml/llama3-lora-sft-0-h7x2k, ml/other-0"))
    assert f.keep(line(message="could not schedule pod", Pod={"name": "llama3-lora-sft-0-h7x2k", "namespace": "ml"}))
    assert f.keep(line(message="registered nodeclaim", controllerKind="NodeClaim", name="gpu-finetune-7xk2q",
                       Node={"name": "ip-10-0-45-211.ec2.internal"}))
    assert f.keep(line(message="ignoring nodepool, not ready", NodePool={"name": "gpu"}))
    # A NodeClaim that is gone (failed launch, deleted) still belongs to an affected pool by its name.
    assert f.keep(line(level="ERROR", message="failed launching nodeclaim", NodeClaim={"name": "gpu-hk2wd"}))


def test_other_lines_are_dropped() -> None:
    f = KarpenterFilter(NAMES, errors_too=False)
    # A pool called `gpu` must not pull in every line mentioning nvidia.com/gpu.
    assert not f.keep(line(message="computed new nodeclaim(s) to fit pod(s)", requests={"nvidia.com/gpu": "1"}))
    assert not f.keep(line(message="ignoring nodepool, not ready", NodePool={"name": "default"}))
    assert not f.keep(line(message="created nodeclaim", NodeClaim={"name": "gpu-training-abcde"}))
    assert not f.keep(line(level="ERROR", message="x", NodeClaim={"name": "other-abcde"}))
    assert not f.keep(line(message="discovered karpenter version", version="1.14.1"))


def test_cluster_wide_keeps_every_error_and_text_lines_by_name() -> None:
    f = KarpenterFilter(NAMES, errors_too=True)
    assert f.keep(line(level="ERROR", message="x", NodeClaim={"name": "other-abcde"}))
    assert f.keep(line(level="WARN", message="y"))
    # Older, non-JSON log formats: matched by whole names only.
    assert f.keep("2026-08-21T09:12:55Z INFO launched nodeclaim gpu-finetune-7xk2q on ip-10-0-45-211.ec2.internal")
    assert not f.keep("2026-08-21T09:12:55Z INFO launched nodeclaim gpu-finetune-7xk2qz")
