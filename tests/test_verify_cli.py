"""``shad verify PATH``: the JSON it prints, the table, and its exit codes (0 ok, 3 blocking findings,
2 usage errors)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.cli._verify import LEVEL_CHOICES
from engine.verify import CHECKS, LEVELS

CLEAN = {
    "pkg/__init__.py": '"""Pkg."""\n\nfrom pkg.core import double\n\n__all__ = ["double"]\n',
    "pkg/core.py": '"""Core."""\n\n\ndef double(x: int) -> int:\n    return 2 * x\n',
    "tests/test_core.py": "from pkg import double\n\n\ndef test_double() -> None:\n    assert double(1)\n",
}
FAILING_TEST = {
    "tests/test_more.py": "from pkg import double\n\n\ndef test_more() -> None:\n    assert double(2) == 5\n"
}
UNUSED_IMPORT = {"pkg/extra.py": '"""Extra."""\n\nimport os\n'}


def project(tmp_path: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path


def shad(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["verify", *args])
    out, err = capsys.readouterr()
    return code, out, err


def shad_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code, out, _ = shad(capsys, *args, "--json")
    return code, json.loads(out)


def test_the_json_shape_is_exact(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, data = shad_json(capsys, str(project(tmp_path, {**CLEAN, **UNUSED_IMPORT})), "--level", "strict")
    assert code == 3
    required = {"ok", "level", "checks", "missing_modules", "missing_symbols"}
    assert required <= set(data) and set(data) - required <= {"isolation", "blocking"}
    assert data["ok"] is False and data["level"] == "strict"
    assert list(data["checks"]) == list(CHECKS)
    for result in data["checks"].values():
        assert set(result) == {"status", "findings", "reason"}
        assert result["status"] in ("pass", "fail", "skip")
        for finding in result["findings"]:
            assert set(finding) == {"path", "line", "message"}
    assert data["checks"]["lint"]["findings"] == [
        {"path": "pkg/extra.py", "line": 3, "message": "F401 `os` imported but unused"}
    ]


def test_clean_code_exits_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, data = shad_json(capsys, str(project(tmp_path, CLEAN)), "--level", "strict")
    assert code == 0 and data["ok"] is True
    assert all(r["status"] == "pass" and r["findings"] == [] for r in data["checks"].values())


def test_the_default_level_is_basic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, data = shad_json(capsys, str(project(tmp_path, {**CLEAN, **FAILING_TEST})))
    assert code == 0 and data["level"] == "basic"
    assert list(data["checks"]) == ["syntax", "imports", "integrity"]


def test_a_blocking_finding_exits_3_and_is_shown(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = project(tmp_path, {**CLEAN, **FAILING_TEST})
    code, out, _ = shad(capsys, str(root), "--level", "strict")
    assert code == 3
    assert "tests/test_more.py:4: test_more failed: assert 4 == 5" in out
    table = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.split()[:1] == ["tests"]}
    assert table == {"tests": "fail"}
    assert "blocked at level strict: tests failed" in out


def test_warn_only_reports_but_exits_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = project(tmp_path, {**CLEAN, **FAILING_TEST, **UNUSED_IMPORT})
    code, data = shad_json(capsys, str(root), "--level", "strict", "--warn-only", "tests,lint")
    assert code == 0 and data["ok"] is True
    assert data["checks"]["tests"]["status"] == "fail" and data["checks"]["tests"]["findings"]
    assert data["checks"]["lint"]["status"] == "fail" and data["checks"]["lint"]["findings"]
    code, out, _ = shad(capsys, str(root), "--level", "strict", "--warn-only", "tests", "--warn-only", "lint")
    assert code == 0 and "(warn only)" in out and "pkg/extra.py:3: F401" in out


def test_block_on_above_the_level_runs_the_check(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = project(tmp_path, {**CLEAN, **UNUSED_IMPORT})
    assert shad_json(capsys, str(root))[0] == 0
    code, data = shad_json(capsys, str(root), "--block-on", "lint")
    assert code == 3 and list(data["checks"]) == ["syntax", "imports", "integrity", "lint"]


def test_a_manifest_json_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    files = [{"path": p, "content": c} for p, c in {**CLEAN, "../up.py": "x = 1\n"}.items()]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"run_id": "r1", "files": files}), encoding="utf-8")
    code, data = shad_json(capsys, str(path))
    assert code == 3
    assert [f["path"] for f in data["checks"]["integrity"]["findings"]] == ["../up.py"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["{missing}"], ["no such file or folder"]),
        (["{root}", "--level", "paranoid"], ["paranoid"]),
        (["{root}", "--block-on", "lint,frobnicate"], ["frobnicate", "syntax, imports, integrity, types"]),
        (["{root}", "--warn-only", "style"], ["style", "the checks are"]),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], words: list[str]
) -> None:
    root = project(tmp_path / "p", CLEAN)
    argv = [a.format(root=root, missing=tmp_path / "nope") for a in args]
    code, out, err = shad(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("shad: error:") and len(err.strip().splitlines()) == 1
    assert all(word in err for word in words), err


def test_the_cli_levels_are_the_engine_levels() -> None:
    assert tuple(level for level in LEVELS if level != "off") == LEVEL_CHOICES
