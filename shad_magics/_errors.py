"""The magics' errors: one clear line and a hint in IPython, never thirty frames of engine internals."""

from __future__ import annotations

import types
from typing import Any

from engine.errors import ShadError, UsageError

__all__ = ["ShadPartialWarning", "ShadRunCancelled", "ShadRunError", "ShadUsageError", "short_traceback"]


def _lines(exc: ShadError) -> list[str]:
    lines = [f"{type(exc).__name__}: {exc.message}"]
    if exc.hint:
        lines.append(f"hint: {exc.hint}")
    return lines


class ShadUsageError(UsageError):
    """A bad ``%%shad`` / ``%shad`` line: unknown subcommand or option, missing vault, undefined --vars."""

    def _render_traceback_(self) -> list[str]:
        return _lines(self)


class ShadRunError(ShadError):
    """A run ended FAILED or FAILED_WITH_DIAGNOSTIC. ``run_id`` and ``status`` say which run and how;
    the run's history stays readable (``%shad trace RUN_ID``)."""

    def __init__(self, message: str, *, hint: str | None = None, run_id: str = "", status: str = "") -> None:
        super().__init__(message, hint=hint, run_id=run_id, status=status)
        self.run_id = run_id
        self.status = status

    def _render_traceback_(self) -> list[str]:
        return _lines(self)


class ShadRunCancelled(ShadRunError, KeyboardInterrupt):
    """A kernel interrupt stopped a run: its history is kept (status PARTIAL) and ``%shad resume RUN_ID``
    continues it. Still a ``KeyboardInterrupt``, so code that stops on one still does; it renders as
    one line, without the frames of the wait it interrupted."""

    def _render_traceback_(self) -> list[str]:
        return [self.message]


class ShadPartialWarning(UserWarning):
    """A run stopped early (budget, time, interrupt) or needs a human: the result is still returned."""


def short_traceback(exc: BaseException) -> BaseException:
    """Give an engine ``ShadError`` passing through a magic the same one-line rendering (IPython looks
    ``_render_traceback_`` up on the instance); other exceptions are real bugs and keep their frames."""
    if isinstance(exc, ShadError) and not hasattr(exc, "_render_traceback_"):

        def render(self: Any) -> list[str]:
            return _lines(self)

        exc._render_traceback_ = types.MethodType(render, exc)  # type: ignore[attr-defined]
    return exc
