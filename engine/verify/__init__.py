"""Check code before anyone trusts it: one checker for software runs and for ``shad verify``.

``verify(manifest, level)`` runs the checks of a level (seed §2.6): ``basic`` syntax, imports and
manifest integrity; ``build`` adds types (mypy, tsc); ``strict`` adds the project's tests (pytest) and lint
(ruff). Every tool runs on a temporary copy in a limited subprocess (no network under bubblewrap), because
the code is model-written. ``verify_path`` reads a project folder or a ``manifest.json`` first.
"""

from __future__ import annotations

from ._report import ALIASES, CHECKS, LEVEL_CHECKS, LEVELS, CheckResult, VerifyReport, check_names
from ._verify import verify, verify_path

__all__ = [
    "ALIASES",
    "CHECKS",
    "LEVELS",
    "LEVEL_CHECKS",
    "CheckResult",
    "VerifyReport",
    "check_names",
    "verify",
    "verify_path",
]
