"""Manifest integrity: every path that could escape the output folder, hide its real name or collide
with another file is reported with a reason; plain paths are not."""

from __future__ import annotations

import dataclasses

import pytest

from engine.output import Finding, Manifest, ManifestFile, check_integrity


def _findings(*paths: str) -> list[Finding]:
    return check_integrity(Manifest(files=[ManifestFile.make(p, f"# {i}\n") for i, p in enumerate(paths)]))


@pytest.mark.parametrize(
    "path",
    [
        "src/pkg/__init__.py",
        "README.md",
        "docs/café.md",
        "a.b/c-d_e.py",
        ".github/workflows/ci.yml",
        "gitignore/.gitignore",
        "..hidden/x",
        "x" * 255,
    ],
)
def test_plain_paths_pass(path: str) -> None:
    assert _findings(path) == []


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("", "empty path"),
        ("/etc/passwd", "absolute path"),
        ("C:/Windows/x.py", "drive letter"),
        ("c:x.py", "drive letter"),
        ("a/../../b.py", "'..' segment"),
        ("..", "'..' segment"),
        ("a//b.py", "empty path segment"),
        ("a/", "empty path segment"),
        ("./a.py", "'.' segment"),
        ("a\\..\\b.py", "backslash"),
        ("a\x00.py", "NUL"),
        ("a\x1b[31m.py", "control character"),
        ("a\u202egnp.py", "bidirectional"),
        ("a\u200b.py", "invisible"),
        ("a\u2215..\u2215b.py", "looks like a path separator"),
        ("..\uff0fetc\uff0fpasswd", "looks like a path separator"),
        ("a/\u2025/b.py", "normalises (NFKC)"),
        (".git/hooks/pre-commit", ".git/"),
        ("sub/.GIT/config", ".git/"),
        ("a/" + "x" * 256, "longer than 255 bytes"),
        ("/".join(["abcdefghij"] * 100), "longer than 1024 bytes"),
        ("a\udcff.py", "lone surrogate"),
    ],
)
def test_unsafe_paths_are_reported(path: str, fragment: str) -> None:
    findings = _findings(path)
    assert any(fragment in f.message for f in findings), findings
    assert all(f.path == path and f.check == "integrity" and f.line is None for f in findings)


@pytest.mark.parametrize(
    ("first", "second", "fragment"),
    [
        ("src/a.py", "src/a.py", "duplicate path"),
        ("caf\u00e9.py", "cafe\u0301.py", "same file after Unicode normalisation"),
        ("README.md", "readme.md", "same file after Unicode normalisation"),
        ("a.py", "\uff41.py", "same file after Unicode normalisation"),  # fullwidth a
        ("Straße.py", "STRASSE.py", "same file after Unicode normalisation"),
        ("pkg", "pkg/mod.py", "needs it to be a folder"),
    ],
)
def test_collisions_are_reported_once(first: str, second: str, fragment: str) -> None:
    findings = _findings(first, second)
    assert len(findings) == 1 and fragment in findings[0].message
    assert findings[0].path == (first if "folder" in fragment else second)


def test_hash_and_mode_are_checked() -> None:
    good = ManifestFile.make("a.py", "x = 1\n")
    edited = dataclasses.replace(good, content="x = 2\n")
    odd = dataclasses.replace(good, path="b.py", mode="append")
    findings = check_integrity(Manifest(files=[good, edited, odd]))
    messages = [(f.path, f.message) for f in findings if "duplicate" not in f.message]
    assert messages == [
        ("a.py", "hash does not match the content (was the manifest edited?)"),
        ("b.py", "mode 'append' is not one of create, overwrite"),
    ]


def test_finding_to_dict() -> None:
    finding = Finding("a.py", 3, "boom", "syntax")
    assert finding.to_dict() == {"path": "a.py", "line": 3, "message": "boom", "check": "syntax"}
