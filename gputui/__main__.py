"""`python -m gputui`."""

from gputui.cli.program import entry

entry()
