"""``engine.verify``: each planted fault is found by the right check at the right level (and by no check
at a lower level), a clean package passes ``strict``, and ``block_on``/``warn_only`` decide what blocks.
Real tools throughout: ast, mypy, pytest, ruff, node and tsc when this machine has them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from engine.errors import UsageError
from engine.output import Manifest, ManifestFile
from engine.verify import CHECKS, LEVEL_CHECKS, LEVELS, verify, verify_path
from engine.verify import _types as types_module
from engine.verify._isolate import isolation

CLEAN: dict[str, str] = {
    "pyproject.toml": '[project]\nname = "pkg"\nversion = "0.1"\n',
    "pkg/__init__.py": '"""A tiny package."""\n\nfrom pkg.mathx import add\n\n__all__ = ["add"]\n',
    "pkg/mathx.py": '"""Arithmetic."""\n\n\ndef add(a: int, b: int) -> int:\n    return a + b\n',
    "pkg/data.json": '{"answer": 42}\n',
    "tests/test_mathx.py": "from pkg import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n",
}

BAD_TEST = "from pkg import add\n\n\ndef test_bad() -> None:\n    assert add(1, 1) == 3\n"

# name: (extra files, the check that finds it, the lowest level that runs that check, path, line)
FAULTS: dict[str, tuple[dict[str, str], str, str, str, int | None]] = {
    "syntax error": ({"pkg/broken.py": "def f(:\n    pass\n"}, "syntax", "basic", "pkg/broken.py", 1),
    "json error": ({"pkg/bad.json": '{"a": 1,\n}\n'}, "syntax", "basic", "pkg/bad.json", 2),
    "unknown module": (
        {"pkg/uses.py": "import notamodule_xyz\n\nVALUE = notamodule_xyz.x\n"},
        "imports",
        "basic",
        "pkg/uses.py",
        1,
    ),
    "missing symbol": (
        {"pkg/uses.py": 'from pkg.mathx import Missing\n\n__all__ = ["Missing"]\n'},
        "imports",
        "basic",
        "pkg/uses.py",
        1,
    ),
    "type error": ({"pkg/typed.py": '"""Typed."""\n\nx: int = "s"\n'}, "types", "build", "pkg/typed.py", 3),
    "failing test": (
        {"tests/test_bad.py": BAD_TEST},
        "tests",
        "strict",
        "tests/test_bad.py",
        4,
    ),
    "lint error": ({"pkg/lint.py": '"""Lint."""\n\nimport os\n'}, "lint", "strict", "pkg/lint.py", 3),
}


def write(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def manifest(files: Mapping[str, str], dependencies: tuple[str, ...] = ()) -> Manifest:
    return Manifest(
        files=[ManifestFile.make(p, c) for p, c in files.items()], dependencies=list(dependencies)
    )


def test_a_clean_package_passes_strict_with_no_findings(tmp_path: Path) -> None:
    report = verify_path(write(tmp_path, CLEAN), "strict")
    assert {name: r.status for name, r in report.checks.items()} == dict.fromkeys(CHECKS, "pass")
    assert report.ok and report.findings == []
    assert report.missing_modules == [] and report.missing_symbols == []
    assert "mypy" in report.checks["types"].reason and "pytest" in report.checks["tests"].reason


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_is_found_by_its_check_at_its_level_and_not_below(tmp_path: Path, fault: str) -> None:
    extra, check, level, path, line = FAULTS[fault]
    root = write(tmp_path, {**CLEAN, **extra})
    report = verify_path(root, level)
    assert not report.ok
    result = report.checks[check]
    assert result.status == "fail"
    assert (path, line) in [(f.path, f.line) for f in result.findings], result.findings
    below = LEVELS[LEVELS.index(level) - 1]
    lower = verify_path(root, below)
    assert check not in lower.checks and lower.ok, lower.to_dict()
    assert all(f.path != path for f in lower.findings)


def test_missing_imports_are_listed_in_the_report(tmp_path: Path) -> None:
    files = {
        **CLEAN,
        "pkg/uses.py": "import notamodule_xyz\nfrom pkg.mathx import Missing\n\nX = [notamodule_xyz]\n",
    }
    report = verify(manifest(files), "basic")
    assert [m["import"] for m in report.missing_modules] == ["notamodule_xyz"]
    assert [(m["module"], m["symbol"]) for m in report.missing_symbols] == [("pkg.mathx", "Missing")]


def test_declared_dependencies_and_the_stdlib_resolve() -> None:
    files = {**CLEAN, "pkg/io.py": '"""IO."""\n\nimport json\n\nimport yaml\n\nX = [json, yaml]\n'}
    assert not verify(manifest(files), "basic").ok
    report = verify(manifest(files, dependencies=("yaml",)), "basic")
    assert report.ok and report.checks["imports"].status == "pass"


def test_a_dotdot_path_in_a_manifest_json_is_an_integrity_failure_and_is_never_written(
    tmp_path: Path,
) -> None:
    files = {**CLEAN, "../escape.py": "x = 1\n", "/abs/evil.py": "y = 2\n"}
    path = tmp_path / "run" / "manifest.json"
    path.parent.mkdir()
    path.write_text(json.dumps(manifest(files).to_dict()), encoding="utf-8")
    report = verify_path(path, "strict")
    assert not report.ok
    flagged = {f.path for f in report.checks["integrity"].findings}
    assert flagged == {"../escape.py", "/abs/evil.py"}
    # the tools never saw them (no "cannot read" noise), and nothing was written beside the manifest
    assert {name for name, r in report.checks.items() if r.status == "fail"} == {"integrity"}
    assert not (tmp_path / "escape.py").exists() and not Path("/abs/evil.py").exists()
    assert not verify_path(path, "basic").ok  # integrity blocks from basic on


def test_a_src_layout_is_one_project(tmp_path: Path) -> None:
    files = {f"src/{k}" if k.startswith("pkg/") else k: v for k, v in CLEAN.items()}
    report = verify_path(write(tmp_path, files), "strict")
    assert report.ok, report.to_dict()
    assert report.checks["tests"].status == "pass"


def test_block_on_a_check_above_the_level_runs_it_and_makes_it_blocking(tmp_path: Path) -> None:
    root = write(tmp_path, {**CLEAN, **FAULTS["lint error"][0]})
    assert verify_path(root, "basic").ok
    report = verify_path(root, "basic", block_on=["lint"])
    assert list(report.checks) == ["syntax", "imports", "integrity", "lint"]
    assert not report.ok and report.checks["lint"].status == "fail"


def test_warn_only_keeps_the_findings_but_does_not_block(tmp_path: Path) -> None:
    root = write(tmp_path, {**CLEAN, **FAULTS["failing test"][0]})
    report = verify_path(root, "strict", warn_only=["tests"])
    assert report.ok
    assert report.checks["tests"].status == "fail" and report.checks["tests"].findings
    assert "tests" not in report.blocking


def test_seed_names_and_comma_lists_are_accepted() -> None:
    report = verify(manifest(CLEAN), "basic", block_on="typecheck")
    assert "types" in report.checks and "types" in report.blocking


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"level": "paranoid"}, ["paranoid", "basic, build, strict"]),
        (
            {"block_on": ["lint", "frobnicate"]},
            ["frobnicate", "syntax, imports, integrity, types, tests, lint"],
        ),
        ({"warn_only": ["nope"]}, ["nope", "the checks are"]),
        ({"block_on": ["lint"], "warn_only": ["lint"]}, ["lint", "both"]),
    ],
)
def test_bad_options_are_usage_errors_naming_what_is_valid(
    kwargs: dict[str, object], words: list[str]
) -> None:
    with pytest.raises(UsageError) as err:
        verify(manifest(CLEAN), **kwargs)  # type: ignore[arg-type]
    assert all(word in str(err.value) for word in words), str(err.value)


def test_level_off_runs_nothing() -> None:
    report = verify(manifest({**CLEAN, **FAULTS["syntax error"][0]}), "off")
    assert report.ok and report.checks == {} and report.isolation == "no check ran"


def test_a_missing_path_or_a_non_manifest_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file or folder"):
        verify_path(tmp_path / "nope")
    (tmp_path / "notes.txt").write_text("hi", encoding="utf-8")
    with pytest.raises(UsageError, match=r"neither a folder nor a manifest\.json"):
        verify_path(tmp_path / "notes.txt")


def test_the_levels_add_checks_as_the_seed_says() -> None:
    assert LEVEL_CHECKS["basic"] == ("syntax", "imports", "integrity")
    assert LEVEL_CHECKS["build"] == (*LEVEL_CHECKS["basic"], "types")
    assert LEVEL_CHECKS["strict"] == (*LEVEL_CHECKS["build"], "tests", "lint")
    assert verify(manifest(CLEAN), "build").blocking == LEVEL_CHECKS["build"]


def test_a_missing_type_checker_is_a_skip_with_a_reason_never_a_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(types_module, "has_module", lambda name: name != "mypy")
    report = verify(manifest({**CLEAN, **FAULTS["type error"][0]}), "build")
    assert report.checks["types"].status == "skip"
    assert "mypy is not installed" in report.checks["types"].reason
    assert report.ok  # nothing blocking failed; the skip says why nothing was checked


def test_no_tests_is_a_skip() -> None:
    files = {k: v for k, v in CLEAN.items() if not k.startswith("tests/")}
    report = verify(manifest(files), "strict")
    assert report.checks["tests"].status == "skip" and "no test" in report.checks["tests"].reason
    assert report.ok


def test_files_without_a_checker_are_named_not_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    isolation()  # probe bubblewrap with the real PATH first
    monkeypatch.setenv("PATH", "/nonexistent")
    report = verify(manifest({"web/app.js": "let x = ;\n", "web/lib.ts": "export const y = 1;\n"}), "build")
    assert report.checks["syntax"].status == "skip"
    reason = report.checks["syntax"].reason
    assert "1 JavaScript file(s) not checked: node is not installed" in reason
    assert "tsc is not installed" in reason
    assert report.checks["types"].status == "skip" and "tsc is not installed" in report.checks["types"].reason


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed here")
def test_javascript_syntax_errors_are_found_by_node() -> None:
    files = {"web/ok.mjs": "export const a = 1;\n", "web/bad.js": "const a = 1;\nlet x = ;\n"}
    result = verify(manifest(files), "basic").checks["syntax"]
    assert result.status == "fail"
    assert [(f.path, f.line) for f in result.findings] == [("web/bad.js", 2)]
    assert "SyntaxError" in result.findings[0].message


@pytest.mark.skipif(shutil.which("tsc") is None, reason="tsc (TypeScript) is not installed here")
def test_typescript_syntax_at_basic_and_types_at_build() -> None:
    typed = {"web/lib.ts": "export const y: number = 's';\n"}
    basic = verify(manifest(typed), "basic")
    assert basic.ok and basic.checks["syntax"].status == "pass"
    build = verify(manifest(typed), "build")
    assert not build.ok
    assert [(f.path, f.line) for f in build.checks["types"].findings] == [("web/lib.ts", 1)]
    broken = verify(manifest({"web/bad.ts": "let = ;\n"}), "basic")
    assert broken.checks["syntax"].status == "fail" and "TS1" in broken.checks["syntax"].findings[0].message
