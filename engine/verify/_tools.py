"""What the checks share: which files are which language, where a project's imports start, which tools
this interpreter has, and one rule for turning partial coverage into pass, fail or skip."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import posixpath
import shutil
from collections.abc import Iterable, Sequence

from ..output import Finding, ManifestFile
from ._isolate import ToolRun
from ._report import CheckResult

__all__ = [
    "JS_SUFFIXES",
    "TS_SUFFIXES",
    "has_module",
    "is_python",
    "outcome",
    "python_version_of",
    "source_roots",
    "suffix",
    "tool_finding",
    "which",
]

JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx")
TS_SUFFIXES = (".ts", ".tsx", ".mts", ".cts")


def suffix(path: str) -> str:
    name = path.rsplit("/", 1)[-1].lower()
    return ".d.ts" if name.endswith(".d.ts") else posixpath.splitext(name)[1]


def is_python(f: ManifestFile) -> bool:
    return suffix(f.path) in (".py", ".pyi") or (f.language == "python" and suffix(f.path) == "")


def which(tool: str) -> str | None:
    return shutil.which(tool)


def has_module(name: str) -> bool:
    """Whether this interpreter can import ``name`` (the tools run as ``python -m name``)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def python_version_of(distribution: str) -> str:
    """``"mypy 1.11.2"``, or the bare name when the version is unknown."""
    try:
        return f"{distribution} {importlib.metadata.version(distribution)}"
    except importlib.metadata.PackageNotFoundError:
        return distribution


def source_roots(paths: Iterable[str]) -> list[str]:
    """Folders the project's imports start from besides its root: ``src`` for a src layout."""
    paths = list(paths)
    src = [p for p in paths if p.startswith("src/") and p.endswith((".py", ".pyi"))]
    return ["src"] if src and "src/__init__.py" not in paths else []


def tool_finding(run: ToolRun, tool: str, timeout: float, check: str, path: str = ".") -> Finding:
    """One finding for a tool run that ended without a usable answer (killed, crashed, bad output)."""
    killed = run.killed(tool, timeout)
    if killed:
        return Finding(path, None, killed, check)
    tail = run.output.strip().splitlines()[-6:] or [f"no output, exit code {run.returncode}"]
    return Finding(path, None, f"{tool} failed (exit {run.returncode}): " + " | ".join(tail), check)


def outcome(
    findings: Sequence[Finding],
    checked: Sequence[str],
    unchecked: Sequence[str],
    *,
    tools: Sequence[str] = (),
) -> CheckResult:
    """fail when anything was found; pass when something was checked (what was not is in the reason);
    skip when nothing could be checked: never a silent pass."""
    notes = [f"{len(checked)} file(s) checked" + (f" (tools: {', '.join(tools)})" if tools else "")]
    notes = (notes if checked else []) + list(unchecked)
    reason = "; ".join(notes)
    if findings:
        return CheckResult("fail", list(findings), reason)
    if checked:
        return CheckResult("pass", [], reason)
    return CheckResult("skip", [], "; ".join(unchecked) or "nothing to check")
