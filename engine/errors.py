"""One exception tree for everything a Shad user can cause.

Every error carries structured, picklable fields and a ``hint`` that says what to do next, so the CLI,
the magics and the HTTP API can all show one clear line instead of a traceback.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "IndexUnavailableError",
    "NoteNotFoundError",
    "PathOutsideVaultError",
    "ShadError",
    "UsageError",
    "VaultNotFoundError",
]


class ShadError(Exception):
    """Base class: ``message`` says what happened, ``hint`` what to do about it."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.fields = fields
        for key, value in fields.items():  # structured fields are attributes too (err.node_id ...)
            setattr(self, key, value)

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only fields are not restored by the default Exception pickling.
        return (_rebuild, (type(self), self.message, self.hint, self.fields))

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


def _rebuild(cls: type[ShadError], message: str, hint: str | None, fields: dict[str, Any]) -> ShadError:
    err = cls.__new__(cls)
    ShadError.__init__(err, message, hint=hint, **fields)
    return err


class UsageError(ShadError):
    """A bad argument or option."""

    exit_code = 2


class VaultNotFoundError(ShadError):
    """The vault folder does not exist or is not a folder."""

    exit_code = 2


class NoteNotFoundError(ShadError):
    """A vault-relative path names no note."""


class PathOutsideVaultError(ShadError):
    """A path escapes the vault (``..``, absolute, a symlink out, a hidden folder)."""

    exit_code = 2


class IndexUnavailableError(ShadError):
    """The search index cannot be built here (e.g. SQLite lacks FTS5)."""
