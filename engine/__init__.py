"""Shad's engine: everything that runs, importable and testable without Jupyter."""

from __future__ import annotations

from ._run_api import areplay, aresume, arun, replay, resume, run
from ._version import __version__
from .config import Budgets, RunConfig
from .errors import ShadError
from .run import Run, RunStatus
from .vault import Hit, Note, Vault, VaultSet

__all__ = [
    "Budgets",
    "Hit",
    "Note",
    "Run",
    "RunConfig",
    "RunStatus",
    "ShadError",
    "Vault",
    "VaultSet",
    "__version__",
    "areplay",
    "aresume",
    "arun",
    "replay",
    "resume",
    "run",
]
