"""What verification says: the levels and checks, which checks run and which block, and the report.

The seed (§2.6.2) makes a check *blocking* by level; ``block_on`` adds checks and ``warn_only`` removes
them. Asking to block on a check above the level also runs it: otherwise ``--block-on lint`` at ``basic``
would be a silent no-op, the one thing a checker must never be.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import UsageError
from ..output import Finding

__all__ = [
    "ALIASES",
    "CHECKS",
    "LEVELS",
    "LEVEL_CHECKS",
    "CheckResult",
    "Status",
    "VerifyReport",
    "check_names",
    "plan",
]

LEVELS = ("off", "basic", "build", "strict")
CHECKS = ("syntax", "imports", "integrity", "types", "tests", "lint")
LEVEL_CHECKS: dict[str, tuple[str, ...]] = {
    "off": (),
    "basic": ("syntax", "imports", "integrity"),
    "build": ("syntax", "imports", "integrity", "types"),
    "strict": CHECKS,
}

# The seed's own names for the checks (§2.6.2: ``--block-on typecheck,unit_tests``) are accepted too.
ALIASES = {
    "typecheck": "types",
    "type_check": "types",
    "unit_tests": "tests",
    "import_resolution": "imports",
    "manifest": "integrity",
}

Status = Literal["pass", "fail", "skip"]


@dataclass
class CheckResult:
    """One check's outcome; ``reason`` says why it was skipped, what it could not cover, which tool ran."""

    status: Status
    findings: list[Finding] = field(default_factory=list)
    reason: str = ""
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "findings": [{"path": f.path, "line": f.line, "message": f.message} for f in self.findings],
            "reason": self.reason,
        }


@dataclass
class VerifyReport:
    """Every check that ran, in ``CHECKS`` order; ``ok`` is False when a blocking check failed."""

    ok: bool
    level: str
    checks: dict[str, CheckResult]
    blocking: tuple[str, ...] = ()
    missing_modules: list[dict[str, Any]] = field(default_factory=list)
    missing_symbols: list[dict[str, Any]] = field(default_factory=list)
    isolation: str = ""
    duration_s: float = 0.0

    @property
    def findings(self) -> list[Finding]:
        """All findings of all checks, blocking or not."""
        return [f for result in self.checks.values() for f in result.findings]

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``shad verify --json`` prints (issue 13, item 7), plus ``blocking`` and ``isolation``."""
        return {
            "ok": self.ok,
            "level": self.level,
            "checks": {name: result.to_dict() for name, result in self.checks.items()},
            "missing_modules": list(self.missing_modules),
            "missing_symbols": list(self.missing_symbols),
            "blocking": list(self.blocking),
            "isolation": self.isolation,
        }


def _names(value: Collection[str]) -> list[str]:
    """Check names, with the seed's aliases resolved; a string is read as a comma-separated list."""
    names = value.split(",") if isinstance(value, str) else value
    return [ALIASES.get(name.strip(), name.strip()) for name in names if name.strip()]


def check_names(option: str, values: Collection[str]) -> tuple[str, ...]:
    """Check names as options give them (comma-separated, repeatable, the seed's aliases, any case) ->
    the checks, in order and without repeats; an unknown name is a ``UsageError`` that names it."""
    names: list[str] = []
    unknown: list[str] = []
    for word in (w.strip() for value in values for w in value.split(",")):
        if not word:
            continue
        name = ALIASES.get(word.lower(), word.lower())
        if name not in CHECKS:
            unknown.append(word)
        elif name not in names:
            names.append(name)
    if unknown:
        raise UsageError(
            f"unknown check{'s' if len(unknown) > 1 else ''} for {option}: {', '.join(unknown)}",
            hint=f"the checks are {', '.join(CHECKS)}; aliases: {', '.join(ALIASES)}",
        )
    return tuple(names)


def plan(level: str, block_on: Collection[str], warn_only: Collection[str]) -> tuple[list[str], list[str]]:
    """The checks to run and the ones that block, in ``CHECKS`` order; a bad name is a ``UsageError``."""
    if level not in LEVELS:
        raise UsageError(f"unknown verification level {level!r}", hint=f"use one of {', '.join(LEVELS)}")
    block_on, warn_only = _names(block_on), _names(warn_only)
    for option, names in (("block-on", block_on), ("warn-only", warn_only)):
        unknown = sorted(set(names) - set(CHECKS))
        if unknown:
            raise UsageError(
                f"unknown check{'s' if len(unknown) > 1 else ''} for --{option}: {', '.join(unknown)}",
                hint=f"the checks are {', '.join(CHECKS)}",
            )
    both = sorted(set(block_on) & set(warn_only))
    if both:
        raise UsageError(
            f"{', '.join(both)} cannot be both blocking and warn-only", hint="name each check in one option"
        )
    run = set(LEVEL_CHECKS[level]) | set(block_on)
    blocking = run - set(warn_only)
    return [c for c in CHECKS if c in run], [c for c in CHECKS if c in blocking]
