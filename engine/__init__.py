"""Shad's engine: everything that runs, importable and testable without Jupyter."""

from __future__ import annotations

from ._run_api import areplay, aresume, arun, replay, resume, run
from ._version import __version__
from .checkpoints import ACTIONS as CHECKPOINT_ACTIONS
from .checkpoints import Checkpoint, Decision, decide, pending_checkpoints
from .config import CHECKPOINT_POLICIES, Budgets, RunConfig
from .errors import ShadError
from .run import Run, RunStatus
from .vault import Hit, Note, Vault, VaultSet

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
