"""Shad's engine: everything that runs, importable and testable without Jupyter.

The public names load on first use (PEP 562), so ``import engine`` (and ``shad --help``) costs almost
nothing; ``from engine import run`` loads what a run needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .config import CHECKPOINT_POLICIES, Budgets, RunConfig
    from .errors import ShadError
    from .runs import Run, RunStatus, areplay, aresume, arun, replay, resume, run
    from .runs.checkpoints import ACTIONS as CHECKPOINT_ACTIONS
    from .runs.checkpoints import Checkpoint, Decision, decide, pending_checkpoints
    from .vault import Hit, Note, Vault, VaultSet

# public name -> (module, attribute)
_EXPORTS = {
    "CHECKPOINT_ACTIONS": ("engine.runs.checkpoints", "ACTIONS"),
    "CHECKPOINT_POLICIES": ("engine.config", "CHECKPOINT_POLICIES"),
    "Budgets": ("engine.config", "Budgets"),
    "Checkpoint": ("engine.runs.checkpoints", "Checkpoint"),
    "Decision": ("engine.runs.checkpoints", "Decision"),
    "Hit": ("engine.vault", "Hit"),
    "Note": ("engine.vault", "Note"),
    "Run": ("engine.runs", "Run"),
    "RunConfig": ("engine.config", "RunConfig"),
    "RunStatus": ("engine.runs", "RunStatus"),
    "ShadError": ("engine.errors", "ShadError"),
    "Vault": ("engine.vault", "Vault"),
    "VaultSet": ("engine.vault", "VaultSet"),
    "areplay": ("engine.runs", "areplay"),
    "aresume": ("engine.runs", "aresume"),
    "arun": ("engine.runs", "arun"),
    "decide": ("engine.runs.checkpoints", "decide"),
    "pending_checkpoints": ("engine.runs.checkpoints", "pending_checkpoints"),
    "replay": ("engine.runs", "replay"),
    "resume": ("engine.runs", "resume"),
    "run": ("engine.runs", "run"),
}

__all__ = [
    "CHECKPOINT_ACTIONS",
    "CHECKPOINT_POLICIES",
    "Budgets",
    "Checkpoint",
    "Decision",
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
    "decide",
    "pending_checkpoints",
    "replay",
    "resume",
    "run",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'engine' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
