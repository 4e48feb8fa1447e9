"""Shad's engine: everything that runs, importable and testable without Jupyter."""

from __future__ import annotations

from .errors import ShadError
from .vault import Hit, Note, Vault, VaultSet

__all__ = ["Hit", "Note", "ShadError", "Vault", "VaultSet"]
__version__ = "0.1.0"
