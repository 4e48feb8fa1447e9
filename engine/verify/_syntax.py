"""The syntax check: Python, JSON, TOML and YAML parsed here (parsing runs no code); JavaScript with
``node --check`` and TypeScript with ``tsc`` in the isolated subprocess when those tools exist. A file no
tool here can read is named in the reason, never counted as passed."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Callable

import yaml

from .. import pyast
from ..output import Finding, ManifestFile
from ._isolate import Job
from ._report import CheckResult
from ._tools import TS_SUFFIXES, is_python, outcome, suffix, tool_finding, which

__all__ = ["check_syntax", "parse_tsc"]

# Languages that are prose or data without a grammar to check: not mentioned as "not checked".
_PROSE = {"markdown", "text", "rst", "csv"}
_NODE_DRIVER = """
import json, subprocess, sys
out = []
for path in sys.argv[2:]:
    p = subprocess.run([sys.argv[1], "--check", path], capture_output=True, text=True, errors="replace")
    out.append({"path": path, "rc": p.returncode, "stderr": p.stderr[-4000:]})
print(json.dumps(out))
"""
_TSC_SYNTAX = (
    "--noEmit",
    "--pretty",
    "false",
    "--noResolve",
    "--skipLibCheck",
    "--allowJs",
    "--jsx",
    "preserve",
)
_TSC_LINE = re.compile(r"^(?P<path>.+?)\((?P<line>\d+),(?P<col>\d+)\): error (?P<code>TS\d+): (?P<msg>.*)$")


def check_syntax(job: Job) -> CheckResult:
    findings: list[Finding] = []
    checked: list[str] = []
    unchecked: list[str] = []
    tools: list[str] = []
    others: Counter[str] = Counter()
    js: list[ManifestFile] = []
    ts: list[ManifestFile] = []
    for f in job.files:
        parser = _parser_for(f)
        if parser is not None:
            findings += parser(f)
            checked.append(f.path)
        elif suffix(f.path) in (".js", ".mjs", ".cjs"):
            js.append(f)
        elif suffix(f.path) in (*TS_SUFFIXES, ".d.ts", ".jsx"):
            ts.append(f)
        elif f.language not in _PROSE and f.language not in ("json", "toml", "yaml", "python"):
            others[f.language] += 1
    for files, tool, run in ((js, "node", _node), (ts, "tsc", _tsc)):
        if not files:
            continue
        if which(tool) is None:
            unchecked.append(f"{len(files)} {'JavaScript' if tool == 'node' else 'TypeScript/JSX'} file(s) "
                             f"not checked: {tool} is not installed")  # fmt: skip
            continue
        findings += run(job, files)
        checked += [f.path for f in files]
        tools.append(f"{tool} --check" if tool == "node" else "tsc")
    if "toml" in [f.language for f in job.files] and sys.version_info < (3, 11):
        unchecked.append("TOML files not checked: Python 3.10 has no tomllib")
    if others:
        listed = ", ".join(f"{n} {lang}" for lang, n in sorted(others.items()))
        unchecked.append(f"not checked (no syntax checker for them here): {listed} file(s)")
    return outcome(findings, checked, unchecked, tools=tools)


def _parser_for(f: ManifestFile) -> Callable[[ManifestFile], list[Finding]] | None:
    if is_python(f):
        return _python
    if f.language == "json" or suffix(f.path) == ".json":
        return _json
    if f.language == "yaml":
        return _yaml
    if f.language == "toml" and sys.version_info >= (3, 11):
        return _toml
    return None


def _python(f: ManifestFile) -> list[Finding]:
    try:
        pyast.parse(f.content, filename=f.path)
    except SyntaxError as exc:
        where = f"column {exc.offset}: " if exc.offset else ""
        return [Finding(f.path, exc.lineno, f"{where}SyntaxError: {exc.msg}", "syntax")]
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, lone surrogates, deep nesting
        return [Finding(f.path, None, f"cannot be parsed as Python: {type(exc).__name__}: {exc}", "syntax")]
    return []


def _json(f: ManifestFile) -> list[Finding]:
    try:
        json.loads(f.content)
    except json.JSONDecodeError as exc:
        return [Finding(f.path, exc.lineno, f"column {exc.colno}: invalid JSON: {exc.msg}", "syntax")]
    except RecursionError:
        return [Finding(f.path, None, "invalid JSON: nested too deeply to read", "syntax")]
    return []


def _toml(f: ManifestFile) -> list[Finding]:
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            tomllib.loads(f.content)
        except tomllib.TOMLDecodeError as exc:
            line = re.search(r"line (\d+)", str(exc))
            return [Finding(f.path, int(line.group(1)) if line else None, f"invalid TOML: {exc}", "syntax")]
    return []


def _yaml(f: ManifestFile) -> list[Finding]:
    try:
        for _ in yaml.safe_load_all(f.content):
            pass
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        return [Finding(f.path, line, f"invalid YAML: {exc.problem or exc}", "syntax")]
    except (yaml.YAMLError, RecursionError) as exc:
        return [Finding(f.path, None, f"invalid YAML: {type(exc).__name__}: {exc}", "syntax")]
    return []


def _package_json(f: ManifestFile) -> bool:
    """``package.json`` decides whether ``.js`` is a module; ``tsconfig.json`` is left out on purpose."""
    return f.path.rsplit("/", 1)[-1] == "package.json"


def _node(job: Job, files: list[ManifestFile]) -> list[Finding]:
    node = which("node") or "node"
    wanted = {f.path for f in files}
    run = job.run(
        lambda ws: [sys.executable, "-c", _NODE_DRIVER, node, *sorted(wanted)],
        only=lambda f: f.path in wanted or _package_json(f),
    )
    try:
        results = json.loads(run.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return [tool_finding(run, "node --check", job.timeout, "syntax")]
    findings = []
    for item in results:
        if item["rc"] == 0:
            continue
        lines = item["stderr"].splitlines()
        first = re.match(r"^.*:(\d+)$", lines[0]) if lines else None
        message = next((ln for ln in lines if re.match(r"^\w*Error\b", ln)), lines[-1] if lines else "")
        findings.append(Finding(item["path"], int(first.group(1)) if first else None, message, "syntax"))
    return findings


def _tsc(job: Job, files: list[ManifestFile]) -> list[Finding]:
    """tsc reports syntax (TS1xxx) before anything else and stops there: those are the syntax errors."""
    tsc = which("tsc") or "tsc"
    wanted = {f.path for f in files}
    run = job.run(
        lambda ws: [tsc, *_TSC_SYNTAX, *sorted(wanted)], only=lambda f: f.path in wanted or _package_json(f)
    )
    diagnostics, problem = parse_tsc(run.output)
    if run.killed("tsc", job.timeout) or problem:
        return [tool_finding(run, "tsc", job.timeout, "syntax")]
    return [
        Finding(d.path, d.line, d.message, "syntax")
        for d in diagnostics
        if re.search(r": TS1\d{3}:", d.message)
    ]


def parse_tsc(output: str) -> tuple[list[Finding], bool]:
    """tsc's ``path(line,col): error TSnnnn: message`` lines as findings (check "types"), and whether it
    also printed an error about itself (a bad option, a missing config): then it did not check the code."""
    found = []
    problem = False
    for line in output.splitlines():
        m = _TSC_LINE.match(line.strip())
        if m:
            message = f"column {m['col']}: {m['code']}: {m['msg']}"
            found.append(Finding(m["path"], int(m["line"]), message, "types"))
        elif re.match(r"^error TS\d+:", line.strip()):
            problem = True
    return found, problem
