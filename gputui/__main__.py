"""`python -m gputui`."""

from gputui.cli.main import entry

entry()
