"""The .tar.gz container: written atomically, read in memory with limits checked while reading.

Writing: a temp file in the target directory, fsync, then a rename (or a hard link when overwriting is
not allowed, so an existing file is never clobbered by a race). Any exception, Ctrl-C included, removes
the temp file: there is never a half-written bundle under the final name.

Reading never extracts. Members are read one by one from a stream (`tarfile` mode `r|`) over our own
gzip reader, which counts decompressed bytes, so a bomb is stopped while it inflates rather than after.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tarfile
import tempfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

MiB = 1024 * 1024


def _q(name: str) -> str:
    """A member name as an error line shows it: quoted, on one line, escapes visible, at most 120
    characters (a hostile archive's 100k-character or multi-line name must not become the message)."""
    from gputui.output.sanitize import one_line

    return f"'{one_line(name, limit=120)}'"


class ArchiveError(Exception):
    """A one-line reason the archive cannot be read safely (bundle, member or limit named)."""


class TargetExists(Exception):
    """The output file exists and overwriting was not asked for (`--force`)."""


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """What a reader accepts. Generous next to the writer's defaults (64 MiB of content)."""

    max_file_bytes: int = 512 * MiB
    """Compressed size of the .tar.gz itself."""
    max_member_bytes: int = 128 * MiB
    max_total_bytes: int = 512 * MiB
    """Decompressed bytes of the whole tar stream."""
    max_members: int = 20_000
    max_ratio: float = 200.0
    """Decompressed/compressed; JSON and logs stay far below, a bomb goes far above."""
    ratio_floor: int = 8 * MiB
    """The ratio is only enforced past this many decompressed bytes (tiny files compress absurdly well)."""


# --- writing -------------------------------------------------------------------------------------

def write_atomic(path: Path, members: Iterable[tuple[str, bytes]], *, mtime: datetime, force: bool = False) -> int:
    """Write `members` (name, data) as a .tar.gz at `path`; returns its size.

    Raises TargetExists, output.files.NotARegularFile (a device, FIFO, link or directory is never
    replaced, even with `force`), OSError."""
    from gputui.output.files import refuse_non_regular

    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    refuse_non_regular(path)
    if path.exists() and not force:
        raise TargetExists(str(path))
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=directory)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as raw:
            # mtime fixed: the same content gives the same bytes (diffable, cacheable).
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=int(mtime.timestamp())) as gz:
                with tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                    for name, data in members:
                        info = tarfile.TarInfo(name)
                        info.size = len(data)
                        info.mtime = int(mtime.timestamp())
                        info.mode = 0o644
                        info.uname = info.gname = "gputui"
                        tar.addfile(info, io.BytesIO(data))
            raw.flush()
            os.fsync(raw.fileno())
        if force:
            refuse_non_regular(path)  # again: it may have been swapped for a device or FIFO meanwhile
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # fails if the name appeared meanwhile: never clobber
            except FileExistsError:
                raise TargetExists(str(path)) from None
            except OSError:
                # Filesystems without hard links: a rename after a last existence check.
                if path.exists():
                    raise TargetExists(str(path)) from None
                os.replace(tmp, path)
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        _fsync_dir(directory)
        return path.stat().st_size
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- reading -------------------------------------------------------------------------------------

class _Bomb(Exception):
    pass


class _CountingReader(io.RawIOBase):
    """Decompressed bytes out of a gzip stream, refusing to go past the size and ratio limits."""

    def __init__(self, gz: gzip.GzipFile, compressed_size: int, limits: ReadLimits) -> None:
        self.gz = gz
        self.count = 0
        self.compressed = max(compressed_size, 1)
        self.limits = limits

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.gz.read(len(b))
        self.count += len(data)
        if self.count > self.limits.max_total_bytes:
            raise _Bomb(f"expands beyond {self.limits.max_total_bytes // MiB} MiB")
        if self.count > self.limits.ratio_floor and self.count / self.compressed > self.limits.max_ratio:
            raise _Bomb(f"expands more than {self.limits.max_ratio:.0f}x (a compression bomb?)")
        n = len(data)
        b[:n] = data
        return n


def safe_member_name(name: str) -> str | None:
    """The member's normalised relative name, or None when it could escape a directory."""
    if not name or "\x00" in name or "\\" in name:
        return None
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


def read_members(path: Path, limits: ReadLimits = ReadLimits()) -> dict[str, bytes]:
    """Every regular member of a .tar.gz, in memory. Raises ArchiveError with one line on anything unsafe."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ArchiveError("no such file") from None
    except OSError as exc:
        raise ArchiveError(exc.strerror or str(exc)) from None
    if path.is_dir():
        raise ArchiveError("is a directory, not a .tar.gz bundle")
    if size > limits.max_file_bytes:
        raise ArchiveError(f"file is {size // MiB} MiB, over the {limits.max_file_bytes // MiB} MiB limit")
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise ArchiveError(exc.strerror or str(exc)) from None
    with fh:
        if fh.read(2) != b"\x1f\x8b":
            raise ArchiveError("not a gzip-compressed tar (a gputui bundle is a .tar.gz)")
        fh.seek(0)
        gz = gzip.GzipFile(fileobj=fh, mode="rb")
        reader = io.BufferedReader(_CountingReader(gz, size, limits), buffer_size=64 * 1024)
        members: dict[str, bytes] = {}
        try:
            with tarfile.open(fileobj=reader, mode="r|") as tar:
                for count, info in enumerate(tar, start=1):
                    if count > limits.max_members:
                        raise ArchiveError(f"more than {limits.max_members} members")
                    _check_member(info, limits)
                    if info.isdir():
                        if PurePosixPath(info.name).suffix in _FILE_SUFFIXES:
                            # gputui writes no directories; one named like a file (`report.json/`) is
                            # a tampered archive shadowing a member the reader looks up by name.
                            raise ArchiveError(f"refused: member {_q(info.name)} is a directory, not a file")
                        continue
                    name = safe_member_name(info.name)
                    assert name is not None  # checked above
                    if name in members:
                        raise ArchiveError(f"member {_q(info.name)} appears twice")
                    f = tar.extractfile(info)
                    data = f.read(info.size + 1) if f is not None else b""
                    if len(data) != info.size:
                        raise ArchiveError(f"member {_q(info.name)} is truncated")
                    members[name] = data
        except _Bomb as exc:
            raise ArchiveError(f"refused: archive {exc}") from None
        except (EOFError, tarfile.ReadError, zlib.error, gzip.BadGzipFile) as exc:
            detail = str(exc).strip() or type(exc).__name__
            raise ArchiveError(f"truncated or corrupt archive ({detail})") from None
        except OSError as exc:
            raise ArchiveError(f"cannot read: {exc.strerror or exc}") from None
    return members


_FILE_SUFFIXES = frozenset({".json", ".md", ".txt", ".log", ".gz", ".csv", ".yaml"})


def _check_member(info: tarfile.TarInfo, limits: ReadLimits) -> None:
    if safe_member_name(info.name) is None:
        raise ArchiveError(f"refused: unsafe member path {_q(info.name)} (absolute or '..')")
    if info.issym() or info.islnk():
        what = "symlink" if info.issym() else "hard link"
        raise ArchiveError(f"refused: member {_q(info.name)} is a {what} (to {_q(info.linkname)})")
    if info.ischr() or info.isblk() or info.isfifo():
        raise ArchiveError(f"refused: member {_q(info.name)} is a device or FIFO")
    if not (info.isreg() or info.isdir()):
        raise ArchiveError(f"refused: member {_q(info.name)} has an unsupported type")
    if info.size > limits.max_member_bytes:
        raise ArchiveError(f"refused: member {_q(info.name)} is {info.size // MiB} MiB, over the "
                           f"{limits.max_member_bytes // MiB} MiB limit")
