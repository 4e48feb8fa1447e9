"""The type check: mypy (this interpreter's) for Python and ``tsc --noEmit`` for TypeScript, each on an
isolated temporary copy, with mypy's cache kept in that copy's scratch folder (never the project's)."""

from __future__ import annotations

import re
import sys

from ..output import Finding, ManifestFile
from ._isolate import Job, Workspace
from ._report import CheckResult
from ._syntax import parse_tsc
from ._tools import (
    TS_SUFFIXES,
    has_module,
    is_python,
    outcome,
    python_version_of,
    source_roots,
    suffix,
    tool_finding,
    which,
)

__all__ = ["check_types", "parse_mypy"]

_MYPY_LINE = re.compile(r"^(?P<path>[^:\n]+?):(?:(?P<line>\d+):)?(?:(?P<col>\d+):)? error: (?P<msg>.*)$")
_INSTALL = "pip install 'shad[verify]'"


def check_types(job: Job) -> CheckResult:
    python = [f for f in job.files if is_python(f)]
    typescript = [f for f in job.files if suffix(f.path) in (*TS_SUFFIXES, ".d.ts")]
    if not python and not typescript:
        return CheckResult("skip", [], "no Python or TypeScript files to type-check")
    findings: list[Finding] = []
    checked: list[str] = []
    unchecked: list[str] = []
    tools: list[str] = []
    if python and not has_module("mypy"):
        unchecked.append(f"{len(python)} Python file(s) not type-checked: mypy is not installed ({_INSTALL})")
    elif python:
        findings += _mypy(job, python)
        checked += [f.path for f in python]
        tools.append(python_version_of("mypy"))
    if typescript and which("tsc") is None:
        unchecked.append(f"{len(typescript)} TypeScript file(s) not type-checked: tsc is not installed")
    elif typescript:
        findings += _tsc(job, typescript)
        checked += [f.path for f in typescript]
        tools.append("tsc --noEmit")
    return outcome(findings, checked, unchecked, tools=tools)


def _mypy(job: Job, python: list[ManifestFile]) -> list[Finding]:
    paths = {f.path for f in python}
    # foo.py and foo.pyi are one module to mypy: naming both is an error, so the stub alone is named
    targets = sorted(p for p in paths if not (p.endswith(".py") and p + "i" in paths))
    roots = source_roots(paths)

    def argv(ws: Workspace) -> list[str]:
        return [
            sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-error-summary",
            "--show-column-numbers", "--show-error-codes", "--no-pretty", "--no-color-output",
            "--explicit-package-bases", "--cache-dir", str(ws.scratch / "mypy"), *targets,
        ]  # fmt: skip

    run = job.run(argv, env=lambda ws: {"MYPYPATH": ":".join(roots)} if roots else {})
    found = parse_mypy(run.stdout + "\n" + run.stderr)
    if run.killed("mypy", job.timeout) or run.returncode not in (0, 1, 2) or (run.returncode and not found):
        return [tool_finding(run, "mypy", job.timeout, "types")]
    return found


def parse_mypy(output: str) -> list[Finding]:
    """mypy's ``path:line:col: error: message`` lines (notes are left out) as findings."""
    found = []
    for line in output.splitlines():
        m = _MYPY_LINE.match(line.strip())
        if m:
            message = re.sub(r"\s+\[([\w-]+)\]$", r" [\1]", m["msg"])  # mypy pads the error code
            message = f"column {m['col']}: {message}" if m["col"] else message
            found.append(Finding(m["path"], int(m["line"]) if m["line"] else None, message, "types"))
    return found


def _tsc(job: Job, typescript: list[ManifestFile]) -> list[Finding]:
    tsc = which("tsc") or "tsc"
    base = [tsc, "--noEmit", "--pretty", "false"]
    if any(f.path == "tsconfig.json" for f in job.files):
        run = job.run(lambda ws: [*base, "-p", "."])
    else:
        wanted = sorted({f.path for f in typescript})
        run = job.run(lambda ws: [*base, "--skipLibCheck", *wanted])
    found, problem = parse_tsc(run.output)
    if run.killed("tsc", job.timeout) or problem or (run.returncode and not found):
        return [*found, tool_finding(run, "tsc", job.timeout, "types")]
    return found
