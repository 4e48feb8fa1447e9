"""The safe writer: files land under the output folder and nowhere else, existing files are kept unless
--overwrite, and every unsafe path (traversal, absolute, symlinks out, Unicode collisions) is refused.
The property test throws arbitrary path sequences at it with symlinks planted in the output folder."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import UsageError
from engine.output import Manifest, ManifestFile, write_manifest


def _manifest(*files: tuple[str, str]) -> Manifest:
    return Manifest(files=[ManifestFile.make(p, c) for p, c in files])


def _reasons(entries: list[dict[str, str]]) -> dict[str, str]:
    return {e["path"]: e["reason"] for e in entries}


def test_writes_files_under_the_output(tmp_path: Path) -> None:
    out = tmp_path / "new" / "out"  # created, parents too
    manifest = _manifest(("src/pkg/__init__.py", "x = 1\n"), ("README.md", "# ä\n"))
    report = write_manifest(manifest, out)
    assert (out / "src" / "pkg" / "__init__.py").read_text(encoding="utf-8") == "x = 1\n"
    assert (out / "README.md").read_text(encoding="utf-8") == "# ä\n"
    assert stat.S_IMODE((out / "README.md").stat().st_mode) == 0o644
    assert report.to_dict() == {
        "output": str(out),
        "written": [
            {"path": "src/pkg/__init__.py", "reason": "created", "hash": manifest.files[0].hash},
            {"path": "README.md", "reason": "created", "hash": manifest.files[1].hash},
        ],
        "skipped": [],
        "refused": [],
    }
    leftovers = [p for p in out.rglob("*") if p.name.startswith(".shad-")]
    assert leftovers == []


def test_existing_files_are_skipped_unless_overwrite(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("old\n", encoding="utf-8")
    (tmp_path / "same.py").write_text("same\n", encoding="utf-8")
    manifest = _manifest(("a.py", "new\n"), ("same.py", "same\n"))

    report = write_manifest(manifest, tmp_path)
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == "old\n"
    assert _reasons(report.skipped) == {"a.py": "exists; pass --overwrite", "same.py": "unchanged"}
    assert report.written == []

    report = write_manifest(manifest, tmp_path, overwrite=True)
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == "new\n"
    assert _reasons(report.written) == {"a.py": "overwritten"}
    assert _reasons(report.skipped) == {"same.py": "unchanged"}


def test_traversal_and_absolute_paths_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    manifest = _manifest(
        ("../x.py", "escaped\n"),
        ("a/../../y.py", "escaped\n"),
        (str(tmp_path / "abs.py"), "escaped\n"),
        ("/etc/x", "escaped\n"),
        ("ok.py", "fine\n"),
    )
    report = write_manifest(manifest, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert [p.name for p in out.iterdir()] == ["ok.py"]
    reasons = _reasons(report.refused)
    assert "'..' segment" in reasons["../x.py"] and "'..' segment" in reasons["a/../../y.py"]
    assert "absolute path" in reasons[str(tmp_path / "abs.py")] and "absolute path" in reasons["/etc/x"]
    assert not Path("/etc/x").exists()


def test_a_symlinked_folder_leading_outside_is_refused(tmp_path: Path) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    (out / "real").mkdir()
    os.symlink(outside, out / "escape")
    os.symlink(out / "real", out / "alias")  # leads inside: followed
    report = write_manifest(
        _manifest(("escape/x.py", "bad\n"), ("alias/y.py", "good\n")), out, overwrite=True
    )
    assert list(outside.iterdir()) == []
    assert (out / "real" / "y.py").read_text(encoding="utf-8") == "good\n"
    assert _reasons(report.refused) == {
        "escape/x.py": "the folder escape is a symlink that leads outside the output folder"
    }


def test_an_existing_symlink_at_the_target_is_never_written_through(tmp_path: Path) -> None:
    out, secret = tmp_path / "out", tmp_path / "secret.txt"
    out.mkdir()
    secret.write_text("keep\n", encoding="utf-8")
    os.symlink(secret, out / "t.py")
    os.symlink(out / "inside.txt", out / "dangling.py")
    manifest = _manifest(("t.py", "pwned\n"), ("dangling.py", "pwned\n"))
    report = write_manifest(manifest, out, overwrite=True)
    assert secret.read_text(encoding="utf-8") == "keep\n"
    assert (out / "t.py").is_symlink() and not (out / "inside.txt").exists()
    assert set(_reasons(report.refused)) == {"t.py", "dangling.py"}
    assert "never writes through a symlink" in report.refused[0]["reason"]


def test_paths_that_collide_after_unicode_normalisation_are_all_refused(tmp_path: Path) -> None:
    manifest = _manifest(
        ("caf\u00e9.py", "one\n"), ("cafe\u0301.py", "two\n"), ("Readme.md", "a"), ("README.md", "b")
    )
    report = write_manifest(manifest, tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert len(report.refused) == 4 and report.written == []


def test_a_file_where_a_folder_is_needed_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pkg").write_text("a file\n", encoding="utf-8")
    (tmp_path / "dir.py").mkdir()
    report = write_manifest(_manifest(("pkg/mod.py", "x\n"), ("dir.py", "x\n")), tmp_path, overwrite=True)
    assert _reasons(report.refused) == {
        "pkg/mod.py": "pkg is a file, so it cannot be a folder",
        "dir.py": "a folder is at this path",
    }


def test_a_symlinked_output_folder_is_written_where_it_leads(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "out")
    report = write_manifest(_manifest(("a/b.py", "x\n")), tmp_path / "out")
    assert (tmp_path / "real" / "a" / "b.py").read_text(encoding="utf-8") == "x\n"
    assert report.refused == []


def test_output_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("x", encoding="utf-8")
    with pytest.raises(UsageError, match="is not a folder"):
        write_manifest(_manifest(("a.py", "x")), tmp_path / "out")


# --- the property: nothing outside --output is ever created or changed --------------------------------

_SEGMENTS = [
    "..", ".", "", "/", "a", "b", "ä", "a\u0308", "\u2215", "\uff0f", "\\", "C:", ".git", "\x00",
    "x" * 300, "escape", "fileln", "deep", "inside", "A", "..\\..", "%OUT%", "%ABS%",
]  # fmt: skip
_PATHS = st.one_of(
    st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=6).map("/".join),
    st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=4).map("".join),
)


def _snapshot(root: Path, skip: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Every entry under ``root`` except ``skip``: kind, content (or link target) and mtime."""
    seen: dict[str, tuple[str, bytes | str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d != skip]
        for name in dirnames + filenames:
            path = here / name
            st_ = path.lstat()
            if path.is_symlink():
                seen[str(path)] = ("link", os.readlink(path), st_.st_mtime_ns)
            elif path.is_dir():
                seen[str(path)] = ("dir", "", st_.st_mtime_ns)
            else:
                seen[str(path)] = ("file", path.read_bytes(), st_.st_mtime_ns)
    return seen


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paths=st.lists(_PATHS, min_size=1, max_size=8), overwrite=st.booleans())
def test_no_path_sequence_writes_outside_the_output(paths: list[str], overwrite: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        out, outside = base / "out", base / "outside"
        (outside / "sub").mkdir(parents=True)
        (outside / "secret.txt").write_text("keep\n", encoding="utf-8")
        (out / "deep").mkdir(parents=True)
        os.symlink(outside, out / "escape")  # a folder leading out
        os.symlink(outside / "secret.txt", out / "fileln")  # a file leading out
        os.symlink(Path("..") / ".." / "outside", out / "deep" / "up")  # relative, from deeper down
        os.symlink(out / "deep", out / "inside")  # a folder leading inside (may be followed)
        links = {
            p: os.readlink(p) for p in (out / "escape", out / "fileln", out / "deep" / "up", out / "inside")
        }
        real = [p.replace("%OUT%", str(out)).replace("%ABS%", str(outside / "abs.txt")) for p in paths]
        before, root_before = _snapshot(base, skip=out), sorted(os.listdir("/"))

        report = write_manifest(
            _manifest(*[(p, f"content {i}\n") for i, p in enumerate(real)]), out, overwrite=overwrite
        )

        assert _snapshot(base, skip=out) == before
        assert sorted(os.listdir("/")) == root_before
        assert {p: os.readlink(p) for p in links} == links  # no link was replaced or written through
        assert len(report.written) + len(report.skipped) + len(report.refused) == len(real)
        real_out = os.path.realpath(out)
        for entry in report.written:
            target = os.path.realpath(out / entry["path"])
            assert os.path.commonpath([real_out, target]) == real_out
            assert Path(target).is_file() and not (out / entry["path"]).is_symlink()
        assert not list(out.rglob(".shad-*"))  # no temp file left behind
