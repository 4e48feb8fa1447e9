"""The tests check: the project's own pytest tests, run on an isolated temporary copy; a failed test is a
finding at its ``def`` line, a hung one is killed with the rest of its process group and named."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from collections.abc import Iterable

from .. import pyast
from ..output import Finding
from ._isolate import Job, ToolRun
from ._report import CheckResult
from ._tools import has_module, is_python, python_version_of, source_roots, tool_finding

__all__ = ["check_tests", "declared_plugins", "is_test_file", "parse_pytest"]

# -v prints each test's id as it starts (so a hung test can be named); -rfE the summary lines we read
_PYTEST = ("-m", "pytest", "-v", "-rfE", "--tb=short", "--color=no", "-p", "no:cacheprovider")
_SUMMARY = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<id>.+?)(?: - (?P<msg>.*))?$")
_STARTED = re.compile(r"^(?P<id>\S+\.py::\S+)\s*$")  # -v prints a test's id, its result when done


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def check_tests(job: Job) -> CheckResult:
    if not any(is_test_file(f.path) and is_python(f) for f in job.files):
        return CheckResult("skip", [], "no tests: no test_*.py or *_test.py file")
    if not has_module("pytest"):
        return CheckResult("skip", [], "pytest is not installed (pip install 'shad[verify]')")
    roots = source_roots(f.path for f in job.files)
    plugins = declared_plugins(job.dependencies)
    run = job.run(
        lambda ws: [sys.executable, *_PYTEST, *[arg for name in plugins for arg in ("-p", name)]],
        env=lambda ws: {
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "COLUMNS": "400",  # the short summary is cut to the terminal's width
            **({"PYTHONPATH": ":".join(str(ws.root / r) for r in roots)} if roots else {}),
        },
    )
    tool = f"{python_version_of('pytest')} (plugins: {', '.join(plugins) or 'none declared'})"
    sources = {f.path: f.content for f in job.files if is_python(f)}
    if run.timed_out:
        return CheckResult("fail", [_hung(run, job.timeout, sources)], f"ran {tool}")
    if run.returncode == 5:
        return CheckResult("skip", [], f"ran {tool}: no tests collected")
    findings = parse_pytest(run.stdout, sources)
    if run.returncode == 0 and not findings:
        return CheckResult("pass", [], f"ran {tool}")
    if not findings or run.killed("pytest", job.timeout):
        findings.append(tool_finding(run, "pytest", job.timeout, "tests"))
    return CheckResult("fail", findings, f"ran {tool}")


def declared_plugins(dependencies: Iterable[str]) -> list[str]:
    """The installed pytest plugins the project declares. Others are not loaded: the host's plugins
    must not change how the project's tests run (and loading them all can take seconds)."""
    declared = {d.lower() for d in dependencies}
    names = set()
    for ep in importlib.metadata.entry_points(group="pytest11"):
        dist = re.sub(r"[-.]+", "_", ep.dist.name).lower() if ep.dist else ""
        if dist in declared or ep.module.split(".")[0].lower() in declared:
            names.add(ep.name)
    return sorted(names)


def parse_pytest(output: str, sources: dict[str, str]) -> list[Finding]:
    """The short summary's ``FAILED id - message`` / ``ERROR id - message`` lines as findings."""
    found = []
    for line in output.splitlines():
        m = _SUMMARY.match(line.rstrip())
        if not m:
            continue
        path, _, test = m["id"].partition("::")
        what = f"{test} failed" if m["kind"] == "FAILED" else f"error in {test or 'collection'}"
        message = f"{what}: {m['msg']}" if m["msg"] else what
        found.append(Finding(path, _def_line(sources.get(path), test), message, "tests"))
    return found


def _hung(run: ToolRun, timeout: float, sources: dict[str, str]) -> Finding:
    """The test that was running when time ran out: -v printed its id, and no result after it."""
    started = [m["id"] for m in map(_STARTED.match, run.stdout.splitlines()) if m]
    if not started:
        return Finding(".", None, run.killed("pytest", timeout) or "pytest was killed", "tests")
    path, _, test = started[-1].partition("::")
    message = (
        f"{test} did not finish within {timeout:g}s: pytest was killed with its whole process group "
        "(an endless loop or a hang?)"
    )
    return Finding(path, _def_line(sources.get(path), test), message, "tests")


def _def_line(source: str | None, test: str) -> int | None:
    """The line of ``Class::test[param]`` in the file's source, when it can be found."""
    if not source or not test:
        return None
    try:
        scope: list[ast.stmt] = pyast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    line = None
    for name in test.split("[", 1)[0].split("::"):
        node = next((n for n in scope if isinstance(n, _DEFS) and n.name == name), None)
        if node is None:
            return line
        line, scope = node.lineno, node.body
    return line


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
