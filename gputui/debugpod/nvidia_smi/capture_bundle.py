"""A capture bundle: `# $ nvidia-smi ...` headed blocks of several calls, as a support script saves them."""

from __future__ import annotations

from gputui.debugpod.capture import Section, capture_sections
from gputui.debugpod.nvidia_smi.formats import guarded, rank
from gputui.debugpod.nvidia_smi.partial import Parsed


def parse_capture(text: str) -> list[Parsed]:
    """The last block of each format."""
    latest: dict[str, Section] = {}
    for section in capture_sections(text):
        command = (section.command or "").split()
        if command[:1] != ["nvidia-smi"]:
            continue
        args = command[1:]
        if not args:
            latest["nvidia-smi"] = Section("nvidia-smi", section.body, 0)
        elif args == ["-q"]:
            latest["query"] = Section("query", section.body, 0)
        elif args == ["-L"]:
            latest["list"] = Section("list", section.body, 0)
        elif args[0].startswith("--query-gpu="):
            latest["query-gpu"] = Section("query-gpu", section.body, 0)
        elif args[0].startswith("--query-compute-apps="):
            latest["query-compute-apps"] = Section("query-compute-apps", section.body, 0)
    return [guarded(s.name, s.text) for s in sorted(latest.values(), key=lambda s: rank(s.name))]
