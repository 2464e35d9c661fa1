"""`python -m gputui`."""

from gputui.cli import entry

entry()
