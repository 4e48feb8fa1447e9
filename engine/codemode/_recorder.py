"""What a script's run records: the violation and limit exceptions and the Recorder that keeps them even
when the script catches them; apart so the compiler, guards and child share it. Loaded inside the sandbox."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["MAX_MESSAGE", "MAX_NOTIFIED", "Recorder", "SandboxLimit", "SandboxViolation", "Unique"]

MAX_MESSAGE = 500  # a recorded violation or limit (the script controls parts of some messages)
MAX_NOTIFIED = 20  # violations (and limits) reported to the parent as they happen


class SandboxViolation(BaseException):
    """A policy violation. A BaseException so ``except Exception`` does not swallow it; it is recorded
    before it is raised, so catching it does not hide it either."""


class SandboxLimit(BaseException):
    """A resource limit was reached (output, result size, broker budget)."""


class Unique:
    """Trusted helpers a script can hold a reference to (bound guards, the recorder): copying one
    (``dataclasses.asdict`` deep-copies field values) gives the object itself, never a twin whose
    recorder the run would not see."""

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: Any) -> Any:
        return self

    def __reduce__(self) -> NoReturn:
        raise TypeError("sandbox internals cannot be pickled")


class Recorder(Unique):
    """Every violation and limit hit during one script, kept even when the script catches them.
    ``notify`` (the sandbox child's) tells the trusted parent at once, so a run that is later killed or
    crashes is still reported as blocked."""

    def __init__(self, notify: Callable[[str, str], None] | None = None) -> None:
        self.violations: list[str] = []
        self.limits: list[str] = []
        self.notify = notify

    def _note(self, kind: str, into: list[str], message: str) -> str:
        message = message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."
        into.append(message)
        if self.notify is not None and len(into) <= MAX_NOTIFIED:
            self.notify(kind, message)
        return message

    def block(self, message: str) -> NoReturn:
        raise SandboxViolation(self._note("blocked", self.violations, message))

    def limit(self, message: str) -> NoReturn:
        raise SandboxLimit(self._note("limited", self.limits, message))
