"""Python's ``ast`` used from several threads at once.

CPython before 3.12.1 keeps the depth of the syntax tree it is converting in state every thread shares
(gh-106905). When a garbage collection during one thread's ``ast.parse`` runs a finalizer and another
thread parses meanwhile, the count goes wrong and ``ast.parse`` raises ``SystemError: AST constructor
recursion depth mismatch`` for valid code. Checks of generated code run in worker threads, so every
conversion between source and syntax tree in Shad's process goes through here, one at a time. (The Code
Mode sandbox compiles a script in its own single-threaded process, from modules loaded on their own: it
does not use this.)
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["exclusive", "literal_eval", "parse"]

_LOCK = threading.RLock()


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> Any:
    """``ast.parse``, never alongside another thread's."""
    with _LOCK:
        return ast.parse(source, filename, mode)


def literal_eval(text: str) -> Any:
    """``ast.literal_eval`` (it parses too), never alongside another thread's parse."""
    with _LOCK:
        return ast.literal_eval(text)


@contextmanager
def exclusive() -> Iterator[None]:
    """Hold while another library converts a syntax tree (RestrictedPython compiling one)."""
    with _LOCK:
        yield
