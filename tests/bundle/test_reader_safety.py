"""Hostile and damaged archives: each refused with one line (exit 2 from the CLI), nothing written anywhere."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.bundle.archive import MiB, ReadLimits
from gputui.bundle.read import BundleError, open_bundle
from gputui.errors import ExitCode
from tests.bundle.helpers import file_entry, make_tar_gz, run, served

ESCAPE = f"gputui-escape-{uuid.uuid4().hex[:8]}.txt"
"""A name that must never appear outside the test's temp directory."""


@pytest.fixture(scope="module")
def good_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("good")
    out = tmp / "good.tar.gz"
    mp = pytest.MonkeyPatch()
    try:
        with served("subnets-not-found", tmp, mp) as (_sim, cfg):
            from gputui.cli.program import main

            assert main(["bundle", "-q", "--kubeconfig", str(cfg), "-o", str(out)]) == 0
    finally:
        mp.undo()
    return out


def _good_members(good: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(good, "r:gz") as tar:
        return [(m.name, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]  # type: ignore[union-attr]


def _with(good: Path, path: Path, change: Callable[[str, bytes], bytes]) -> Path:
    return make_tar_gz(path, [file_entry(n, change(n, d)) for n, d in _good_members(good)])


def _special(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info, None


def _manifest_version(version: int) -> Callable[[str, bytes], bytes]:
    def change(name: str, data: bytes) -> bytes:
        if name.endswith("/manifest.json"):
            m = json.loads(data)
            m["format_version"] = version
            return json.dumps(m).encode()
        return data
    return change


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _bomb(path: Path) -> Path:
    # 100 MiB of zeros in one member: ~100 KiB on disk; the reader must stop while inflating.
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=1) as gz:
        with tarfile.open(fileobj=gz, mode="w|") as tar:
            info = tarfile.TarInfo("b/resources/pods.json")
            info.size = 100 * MiB
            tar.addfile(info, io.BytesIO(bytes(info.size)))
    path.write_bytes(buf.getvalue())
    return path


CASES: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    "traversal": (lambda g, p: make_tar_gz(p, [file_entry(f"b/../../{ESCAPE}", b"x")]), "unsafe member path"),
    "absolute": (lambda g, p: make_tar_gz(p, [file_entry(f"/tmp/{ESCAPE}", b"x")]), "unsafe member path"),
    "symlink": (lambda g, p: make_tar_gz(p, [_special("b/manifest.json", tarfile.SYMTYPE, "/etc/passwd")]),
                "is a symlink"),
    "hardlink": (lambda g, p: make_tar_gz(p, [file_entry("b/a", b"{}"),
                                              _special("b/manifest.json", tarfile.LNKTYPE, "b/a")]), "hard link"),
    "device": (lambda g, p: make_tar_gz(p, [_special("b/manifest.json", tarfile.CHRTYPE)]), "device"),
    "fifo": (lambda g, p: make_tar_gz(p, [_special("b/manifest.json", tarfile.FIFOTYPE)]), "device or FIFO"),
    "bomb": (lambda g, p: _bomb(p), "compression bomb"),
    "truncated gzip": (lambda g, p: _write(p, g.read_bytes()[: g.stat().st_size // 2]),
                       "truncated or corrupt"),
    "not gzip": (lambda g, p: _write(p, b"PK\x03\x04 a zip, not a bundle"), "not a gzip-compressed tar"),
    "gzip but not tar": (lambda g, p: _write(p, gzip.compress(b"hello " * 1000)), "truncated or corrupt"),
    "empty file": (lambda g, p: _write(p, b""), "not a gzip-compressed tar"),
    "missing manifest": (lambda g, p: make_tar_gz(p, [file_entry("b/report.json", b"{}")]), "no manifest.json"),
    "manifest not json": (lambda g, p: _with(g, p, lambda n, d: b"{oops" if n.endswith("/manifest.json") else d),
                          "manifest.json is not valid JSON"),
    "future version": (lambda g, p: _with(g, p, _manifest_version(99)), "newer than this gputui reads"),
    "ancient version": (lambda g, p: _with(g, p, _manifest_version(0)), "too old"),
    "tampered file": (lambda g, p: _with(g, p, lambda n, d: d.replace(b'"Pending"', b'"Running"')
                                         if n.endswith("/resources/pods.json") else d), "does not match its checksum"),
    "missing listed file": (lambda g, p: make_tar_gz(p, [file_entry(n, d) for n, d in _good_members(g)
                                                         if not n.endswith("/report.json")]),
                            "report.json is listed in manifest.json but missing"),
    "unlisted file": (lambda g, p: make_tar_gz(p, [*(file_entry(n, d) for n, d in _good_members(g)),
                                                   file_entry("good/logs/extra.log", b"hello")]),
                      "logs/extra.log is not listed in manifest.json"),
    "duplicate member": (lambda g, p: make_tar_gz(p, [file_entry("b/x", b"1"), file_entry("b/x", b"2")]),
                         "appears twice"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_or_damaged_archive_is_refused(case: str, good_bundle: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # a reader that extracted would write here (or above, or in /tmp)
    build, message = CASES[case]
    path = build(good_bundle, tmp_path / f"{case.replace(' ', '-')}.tar.gz")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(BundleError) as exc:
        open_bundle(path)
    text = str(exc.value)
    assert message in text and "\n" not in text and text.startswith(str(path))
    code, out, err = run(capsys, "diagnose", "--bundle", str(path))
    assert code == ExitCode.USAGE and out == ""
    assert err.count("\n") == 1 and err.startswith("gputui: error: ") and message in err
    # Nothing was written: not in the working directory, not beside the archive, not in /tmp.
    assert os.listdir(work) == [] and sorted(os.listdir(tmp_path)) == before
    assert not (Path("/tmp") / ESCAPE).exists() and not (tmp_path.parent / ESCAPE).exists()


def test_member_over_the_size_cap_is_refused_from_its_header(tmp_path: Path) -> None:
    path = make_tar_gz(tmp_path / "big.tar.gz", [file_entry("b/manifest.json", bytes(2 * MiB))])
    with pytest.raises(BundleError, match=r"over the 1 MiB limit"):
        open_bundle(path, ReadLimits(max_member_bytes=MiB))


def test_too_many_members_is_refused(tmp_path: Path) -> None:
    path = make_tar_gz(tmp_path / "many.tar.gz", [file_entry(f"b/{i}", b"") for i in range(20)])
    with pytest.raises(BundleError, match="more than 10 members"):
        open_bundle(path, ReadLimits(max_members=10))


def test_missing_file_and_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(BundleError, match="no such file"):
        open_bundle(tmp_path / "nope.tar.gz")
    with pytest.raises(BundleError, match="is a directory"):
        open_bundle(tmp_path)
    code, _out, err = run(capsys, "--bundle", str(tmp_path / "nope.tar.gz"))
    assert code == ExitCode.USAGE and "no such file" in err


def test_target_not_in_bundle_is_one_line(good_bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(capsys, "diagnose", "--bundle", str(good_bundle), "node/ip-10-9-9-9.ec2.internal")
    assert code == ExitCode.USAGE and err.count("\n") == 1
    assert "node/ip-10-9-9-9.ec2.internal is not in this bundle" in err


def test_a_good_bundle_still_opens(good_bundle: Path) -> None:
    # The control case for all of the above.
    b = open_bundle(good_bundle)
    assert b.format_version == 1 and b.snapshot().ec2nodeclasses
