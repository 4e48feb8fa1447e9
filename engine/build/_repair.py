"""What a failed check means for the repair loop (seed §2.6.3): each finding's class, who owns the file,
whether a local repair can fix it or the contracts must change, and a signature so the same failure never
loops.

- syntax, lint, integrity: repaired locally, by the node that wrote the file;
- type: locally, with the contracts as context; escalated when the error is in a contract file;
- import: a symbol missing from a contract module is a contract mismatch (escalated at once, as a
  ``contract_change_request``); any other unresolved import is repaired locally;
- test: locally, with the files the test imports.

Caps: ``MAX_LOCAL_REPAIRS`` per node and ``MAX_ESCALATIONS`` per run; a signature seen before for the same
node ends that node's repairs ("repeated").
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ERROR_CLASSES",
    "MAX_ESCALATIONS",
    "MAX_LOCAL_REPAIRS",
    "Failure",
    "RepairLedger",
    "failures_of",
    "signature",
]

MAX_LOCAL_REPAIRS = 2  # per node (max_local_repairs_per_leaf)
MAX_ESCALATIONS = 10  # per run (max_escalations_per_run)
ERROR_CLASSES = {
    "syntax": "syntax",
    "imports": "import",
    "types": "type",
    "tests": "test",
    "lint": "lint",
    "integrity": "integrity",
}
# What changes between two runs of the same failure: addresses, numbers standing alone (line and column
# numbers, counts; not the digits inside a name like ``handler1``), temporary paths.
_VOLATILE = re.compile(r"\b0x[0-9a-f]+\b|(?<![\w.])\d+(?:\.\d+)?(?![\w.])|/tmp/[^\s:'\"]+", re.IGNORECASE)


@dataclass(frozen=True)
class Failure:
    """One blocking finding, classified: who owns the file and where the repair goes."""

    error_class: str  # syntax | import | type | test | lint | integrity
    path: str
    line: int
    message: str
    owner: str  # the node that wrote the file ("" when nobody in this run did)
    scope: str  # "local" | "escalate"

    def to_dict(self) -> dict[str, Any]:
        return {
            "error_class": self.error_class,
            "path": self.path,
            "line": self.line,
            "message": self.message,
            "owner": self.owner,
            "scope": self.scope,
        }


def failures_of(
    report: Mapping[str, Any],
    owners: Mapping[str, str],
    contract_files: Iterable[str],
    *,
    checks: Iterable[str] | None = None,
) -> list[Failure]:
    """The findings of ``report`` (``VerifyReport.to_dict()``) in the checks that failed — only the
    ``checks`` named, by default the blocking ones — classified and assigned to the node owning each file."""
    contracts = set(contract_files)
    wanted = set(report.get("blocking", ())) if checks is None else set(checks)
    # "cannot import X from m" of a module the contracts own: only the contracts can fix it
    contract_misses = {
        (str(m.get("file", "")), f"cannot import {m.get('symbol', '')} from {m.get('module', '')}:")
        for m in report.get("missing_symbols", [])
        if _module_file(m, owners) in contracts
    }
    out: list[Failure] = []
    for check, result in report.get("checks", {}).items():
        if check not in wanted or result.get("status") != "fail":
            continue
        error_class = ERROR_CLASSES.get(check, check)
        for f in result.get("findings", []):
            path, line, message = (
                str(f.get("path", "")),
                int(f.get("line", 0) or 0),
                str(f.get("message", "")),
            )
            scope = "local"
            misses_contract = any(path == p and message.startswith(m) for p, m in contract_misses)
            if (error_class == "import" and misses_contract) or (error_class == "type" and path in contracts):
                scope = "escalate"
            out.append(Failure(error_class, path, line, message, owners.get(path, ""), scope))
    return out


_SCRIPT_SUFFIXES = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")


def _module_file(missing: Mapping[str, Any], owners: Mapping[str, str]) -> str:
    """The manifest file a missing symbol was asked from: a Python dotted name (flat or ``src/`` layout)
    or a JavaScript/TypeScript specifier relative to the importing file."""
    module = str(missing.get("module", ""))
    if module.startswith("."):
        base = posixpath.normpath(posixpath.join(posixpath.dirname(str(missing.get("file", ""))), module))
        stems = [base, f"{base}/index"]
        candidates = [base] + [stem + suffix for stem in stems for suffix in _SCRIPT_SUFFIXES]
    else:
        dotted = module.replace(".", "/")
        candidates = [
            f"{root}{dotted}{tail}" for root in ("", "src/") for tail in (".py", ".pyi", "/__init__.py")
        ]
        candidates.append(module)
    return next((c for c in candidates if c in owners), "")


def signature(failures: Iterable[Failure]) -> str:
    """The same failures give the same signature, whatever their line numbers or temporary paths:
    ``sha256`` of (class, file, message with numbers and addresses blanked), sorted, first 12 hex digits."""
    keys = sorted({(f.error_class, f.path, _VOLATILE.sub("#", f.message).strip()) for f in failures})
    return hashlib.sha256(repr(keys).encode("utf-8", "surrogatepass")).hexdigest()[:12]


@dataclass
class RepairLedger:
    """What a run has spent on repairs: attempts per node, escalations, signatures already seen."""

    max_local: int = MAX_LOCAL_REPAIRS
    max_escalations: int = MAX_ESCALATIONS
    attempts: dict[str, int] = field(default_factory=dict)
    escalations: int = 0
    seen: dict[str, set[str]] = field(default_factory=dict)
    log: list[dict[str, Any]] = field(default_factory=list)

    def may_repair(self, node: str) -> bool:
        return self.attempts.get(node, 0) < self.max_local

    def may_escalate(self) -> bool:
        return self.escalations < self.max_escalations

    def repeated(self, node: str, sig: str) -> bool:
        """Has ``node`` already tried to repair exactly these failures? (Records ``sig`` as seen.)"""
        seen = self.seen.setdefault(node, set())
        if sig in seen:
            return True
        seen.add(sig)
        return False

    def record(self, node: str, scope: str, entry: dict[str, Any]) -> int:
        """Count one attempt (local: per node; escalate: per run) and log it; returns its number."""
        if scope == "escalate":
            self.escalations += 1
            number = self.escalations
        else:
            self.attempts[node] = self.attempts.get(node, 0) + 1
            number = self.attempts[node]
        self.log.append({"node": node, "scope": scope, "attempt": number, **entry})
        return number
