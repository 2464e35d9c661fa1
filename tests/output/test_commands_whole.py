"""A fix's command is one line on a narrow terminal: Rich's hard wrap made it paste as two commands.

Seen at 100 columns on gpu-not-advertised: `kubectl patch clusterpolicies.nvidia.com cluster-policy
--type=merge -p` ended the line and the JSON patch began the next, so pasting it ran a patch without a body.
"""

from __future__ import annotations

from rich.console import Console

from diagnostics.model import CheckResult, CheckStatus, Finding, ObjectRef, Remediation, Report, Severity
from gputui.output.text import render_report
from tests.builders import NOW

COMMAND = ("kubectl patch clusterpolicies.nvidia.com cluster-policy --type=merge -p "
           "'{\"spec\":{\"daemonsets\":{\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\","
           "\"effect\":\"NoSchedule\"}]}}}'")


def test_a_command_is_not_wrapped_on_a_narrow_terminal() -> None:
    node = ObjectRef("Node", "ip-10-0-45-211.ec2.internal")
    f = Finding(node, "ip-10-0-45-211.ec2.internal (g5.2xlarge) advertises 0 GPUs", (),
                Remediation("Make the GPU Operator's DaemonSets tolerate the node's taint.", (COMMAND,)),
                check="gpu-not-advertised", code="GT201", severity=Severity.ERROR)
    report = Report((CheckResult("gpu-not-advertised", "GT201", "GPU nodes advertise their GPUs",
                                 CheckStatus.FAILED, (f,)),), NOW, target=str(node))
    console = Console(width=80, record=True, color_system=None, force_terminal=True)  # a terminal: Rich wraps
    render_report(report, console, verbose=False)
    lines = console.export_text().splitlines()
    assert f"    $ {COMMAND}" in lines
    assert any(len(ln) > 80 for ln in lines) and "Make the GPU Operator's" in "\n".join(lines)
