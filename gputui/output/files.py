"""Output files are only ever created or replaced as regular files.

An atomic write renames a temp file over the target. Given `-o /dev/full --force` as root, that
rename replaced the device node; a FIFO or socket would go the same way. Whatever is at the path and
is not a regular file is refused, `--force` or not (it only ever means "replace my old file").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["NotARegularFile", "refuse_non_regular"]

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"))


class NotARegularFile(Exception):
    """One line: the output path holds something that must not be replaced."""


def refuse_non_regular(path: str | os.PathLike[str]) -> None:
    """Raise NotARegularFile when `path` exists and is not a regular file (links are not followed)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError:
        return  # unreadable parent etc.: the write itself reports it
    if stat.S_ISREG(mode):
        return
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise NotARegularFile(f"{Path(path)} is {what}, not a regular file; refusing to replace it "
                          "(even with --force): give another file name")
