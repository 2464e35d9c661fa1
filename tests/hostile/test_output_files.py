"""`-o` never replaces what is not a regular file, `--force` or not (issue #24, item 4).

As root, `gputui bundle -o /dev/full --force` renamed the temp archive over the device node; a FIFO
given as `-o` was replaced the same way.
"""

from __future__ import annotations

import os
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest

from gputui.bundle.archive import write_atomic
from gputui.output.files import NotARegularFile
from gputui.sim.kubeconfig import write_kubeconfig
from tests.bundle.helpers import run, served

NOW = datetime(2026, 8, 21, tzinfo=timezone.utc)


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "out.tar.gz"
    os.mkfifo(path)
    return path


def _char_device() -> Path:
    path = Path(os.devnull)
    assert stat.S_ISCHR(os.lstat(path).st_mode)
    return path


@pytest.mark.parametrize("force", [False, True])
def test_bundle_refuses_a_fifo_and_a_char_device(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch, force: bool) -> None:
    fifo = _fifo(tmp_path)
    with served("healthy", tmp_path, monkeypatch) as (_sim, kc):
        for target, what in ((fifo, "a FIFO"), (_char_device(), "a character device")):
            code, out, err = run(capsys, "bundle", "--kubeconfig", str(kc), "-o", str(target),
                                 *(["--force"] if force else []))
            assert code == 2, err
            assert f"{target} is {what}, not a regular file; refusing to replace it" in err
            assert "--force to overwrite" not in err and len(err.strip().splitlines()) == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert stat.S_ISCHR(os.lstat(os.devnull).st_mode)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


def test_a_symlink_is_not_replaced_either(tmp_path: Path) -> None:
    link = tmp_path / "b.tar.gz"
    link.symlink_to(os.devnull)
    with pytest.raises(NotARegularFile, match="is a symbolic link"):
        write_atomic(link, [("x", b"1")], mtime=NOW, force=True)
    assert link.is_symlink()


def test_the_writer_itself_refuses(tmp_path: Path) -> None:
    """The path may become a FIFO after the command checked it: the writer refuses on its own (and
    checks again just before its rename)."""
    fifo = _fifo(tmp_path)
    with pytest.raises(NotARegularFile, match="is a FIFO"):
        write_atomic(fifo, [("x", b"1")], mtime=NOW, force=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.tar.gz"]  # no temp file left behind


def test_a_regular_file_is_still_replaced_with_force(tmp_path: Path) -> None:
    path = tmp_path / "b.tar.gz"
    path.write_bytes(b"old")
    assert write_atomic(path, [("x", b"1")], mtime=NOW, force=True) > 3


def test_demo_kubeconfig_out_refuses_a_device(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path)
    with pytest.raises(NotARegularFile, match="is a FIFO"):
        write_kubeconfig(fifo, "https://127.0.0.1:1")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
