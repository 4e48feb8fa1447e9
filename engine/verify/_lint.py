"""The lint check: ruff with its own defaults (``--isolated``: the project's config cannot switch rules
off, and no cache is written), on an isolated temporary copy."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..output import Finding
from ._isolate import Job
from ._report import CheckResult
from ._tools import (
    JS_SUFFIXES,
    TS_SUFFIXES,
    has_module,
    is_python,
    outcome,
    python_version_of,
    suffix,
    tool_finding,
)

__all__ = ["check_lint", "parse_ruff"]

_RUFF = ("-m", "ruff", "check", "--isolated", "--no-cache", "--output-format=json", ".")


def check_lint(job: Job) -> CheckResult:
    python = [f for f in job.files if is_python(f)]
    scripts = [f for f in job.files if suffix(f.path) in (*JS_SUFFIXES, *TS_SUFFIXES)]
    unchecked = (
        [f"{len(scripts)} JavaScript/TypeScript file(s) not linted: ruff lints Python"] if scripts else []
    )
    if not python:
        return CheckResult("skip", [], "; ".join(unchecked) or "no Python files to lint")
    if not has_module("ruff"):
        return CheckResult("skip", [], "ruff is not installed (pip install 'shad[verify]')")
    wanted = {f.path for f in python}
    run = job.run(lambda ws: [sys.executable, *_RUFF], only=lambda f: f.path in wanted)
    findings = parse_ruff(run.stdout)
    if findings is None or run.returncode not in (0, 1):
        found = findings or []
        return CheckResult("fail", [*found, tool_finding(run, "ruff", job.timeout, "lint")])
    return outcome(findings, sorted(wanted), unchecked, tools=[python_version_of("ruff")])


def parse_ruff(output: str) -> list[Finding] | None:
    """ruff's JSON diagnostics as findings (``F401 `os` imported but unused``); None when it is not JSON."""
    try:
        items: Any = json.loads(output or "[]")
    except ValueError:
        return None
    if not isinstance(items, list):
        return None
    found = []
    for item in items:
        path = str(item.get("filename", "."))  # relative: the copy's folder is cut from the output
        row = (item.get("location") or {}).get("row")
        code = item.get("code") or ""
        found.append(Finding(path, row, f"{code} {item.get('message', '')}".strip(), "lint"))
    return found
