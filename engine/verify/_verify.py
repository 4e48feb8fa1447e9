"""``verify``: run the checks a level asks for on a manifest and say which failures block.

The cheap, in-process checks (integrity, imports) run here; the ones that start tools (syntax for
JavaScript/TypeScript, types, tests, lint) run side by side, each on its own isolated copy, so a test
suite cannot change what the type checker or the linter sees.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..output import Manifest, check_integrity, manifest_from_dir, validate_imports
from ._isolate import Job, copyable, isolation
from ._lint import check_lint
from ._report import CheckResult, VerifyReport, plan
from ._syntax import check_syntax
from ._tests import check_tests
from ._tools import JS_SUFFIXES, TS_SUFFIXES, is_python, suffix
from ._types import check_types

__all__ = ["verify", "verify_path"]

_TOOL_CHECKS: dict[str, Callable[[Job], CheckResult]] = {
    "syntax": check_syntax,
    "types": check_types,
    "tests": check_tests,
    "lint": check_lint,
}


def verify(
    manifest: Manifest,
    level: str = "basic",
    *,
    block_on: Collection[str] = (),
    warn_only: Collection[str] = (),
    timeout: float = 120,
    memory_mb: int = 2048,
) -> VerifyReport:
    """Check ``manifest`` at ``level`` (off, basic, build, strict). Every tool runs in a subprocess on a
    temporary copy with ``timeout`` seconds and ``memory_mb`` of address space; ``ok`` is False when a
    blocking check failed. ``block_on`` adds blocking checks (running them even above the level),
    ``warn_only`` makes checks advisory; an unknown check name is a ``UsageError``."""
    started = time.perf_counter()
    to_run, blocking = plan(level, block_on, warn_only)
    if not timeout > 0:
        raise UsageError(f"timeout must be positive, not {timeout!r}", hint="give seconds, e.g. 120")
    if memory_mb < 64:
        raise UsageError(f"memory_mb {memory_mb} is too small to start a checker", hint="give at least 256")
    # a path that could land outside the copy is never written; the integrity check says why
    files = tuple(f for f in manifest.files if copyable(f.path))
    job = Job(files, float(timeout), int(memory_mb), tuple(manifest.dependencies))
    results: dict[str, CheckResult] = {}
    extra: dict[str, Any] = {"missing_modules": [], "missing_symbols": []}
    tools = [name for name in to_run if name in _TOOL_CHECKS]
    with ThreadPoolExecutor(max_workers=max(1, min(len(tools), os.cpu_count() or 1, 4))) as pool:
        futures = {name: pool.submit(_timed, _TOOL_CHECKS[name], job) for name in tools}
        if "integrity" in to_run:
            results["integrity"] = _timed(_integrity, manifest)
        if "imports" in to_run:
            results["imports"] = _timed(_imports, manifest, extra)
        for name, future in futures.items():
            results[name] = future.result()
    checks = {name: results[name] for name in to_run}
    ok = not any(checks[name].status == "fail" for name in blocking)
    return VerifyReport(
        ok=ok,
        level=level,
        checks=checks,
        blocking=tuple(blocking),
        missing_modules=extra["missing_modules"],
        missing_symbols=extra["missing_symbols"],
        isolation=isolation()[1] if to_run else "no check ran",
        duration_s=time.perf_counter() - started,
    )


def verify_path(path: str | Path, level: str = "basic", **options: Any) -> VerifyReport:
    """``verify`` a project folder (read as one project, see ``manifest_from_dir``) or a ``manifest.json``."""
    plan(level, options.get("block_on", ()), options.get("warn_only", ()))  # bad options fail before reading
    target = Path(path)
    if target.is_dir():
        manifest = manifest_from_dir(target)
    elif target.is_file():
        if target.suffix.lower() != ".json":
            raise UsageError(
                f"{target} is neither a folder nor a manifest.json",
                hint="give a project folder, or the manifest.json of a run",
            )
        manifest = Manifest.load(target)
    else:
        raise UsageError(f"no such file or folder: {target}", hint="give a project folder or a manifest.json")
    return verify(manifest, level, **options)


def _timed(check: Callable[..., CheckResult], *args: Any) -> CheckResult:
    started = time.perf_counter()
    result = check(*args)
    result.duration_s = time.perf_counter() - started
    return result


def _integrity(manifest: Manifest) -> CheckResult:
    if not manifest.files:
        return CheckResult("skip", [], "the manifest has no files")
    findings = check_integrity(manifest)
    return CheckResult("fail" if findings else "pass", findings, f"{len(manifest.files)} path(s) checked")


def _imports(manifest: Manifest, extra: dict[str, Any]) -> CheckResult:
    code = [f for f in manifest.files if is_python(f) or suffix(f.path) in (*JS_SUFFIXES, *TS_SUFFIXES)]
    if not code:
        return CheckResult("skip", [], "no Python, JavaScript or TypeScript files")
    report = validate_imports(manifest)
    extra["missing_modules"] = list(report.missing_modules)
    extra["missing_symbols"] = list(report.missing_symbols)
    reason = f"{len(code)} file(s) checked"
    return CheckResult("fail" if report.findings else "pass", list(report.findings), reason)
