"""Checks on what a script asks the broker for: argument types and sizes, vault-relative paths and what
they really point at; one place, so that every handler refuses alike (``CallRefused``)."""

from __future__ import annotations

import os
from typing import Any

from ..errors import PathOutsideVaultError, ShadError
from ..vault import normalize_note_path

__all__ = [
    "CallRefused",
    "check_path",
    "hidden_target",
    "int_arg",
    "link_text",
    "str_arg",
    "str_list",
    "where_arg",
]


class CallRefused(Exception):
    """A request the broker will not answer: ``kind`` is blocked, limited or error."""

    def __init__(self, kind: str, message: str, type: str = "BrokerError") -> None:
        super().__init__(message)
        self.kind = kind
        self.type = type


def str_arg(name: str, value: Any, max_len: int = 1024, required: bool = True) -> str | None:
    """A string argument of at most ``max_len`` characters (None when absent and not ``required``)."""
    if value is None:
        if required:
            raise CallRefused("error", f"{name} is required", "TypeError")
        return None
    if not isinstance(value, str):
        raise CallRefused("error", f"{name} must be a string, not {type(value).__name__}", "TypeError")
    if len(value) > max_len:
        raise CallRefused("limited", f"{name} is longer than {max_len} characters", "LimitExceeded")
    return value


def int_arg(name: str, value: Any, lo: int, hi: int, default: int) -> int:
    """An integer argument in ``[lo, hi]`` (``default`` when absent)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise CallRefused("error", f"{name} must be an integer", "TypeError")
    if not lo <= value <= hi:
        raise CallRefused("error", f"{name} must be between {lo} and {hi} (got {value})", "ValueError")
    return value


def str_list(name: str, value: Any, max_items: int = 50) -> list[str] | None:
    """A list of short strings (one string counts as a list of one)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or len(value) > max_items:
        raise CallRefused("error", f"{name} must be a list of at most {max_items} strings", "TypeError")
    return [str(str_arg(name, v, 200)) for v in value]


def where_arg(value: Any) -> dict[str, Any] | None:
    """A frontmatter filter: at most 20 fields, each a scalar or a short list of scalars."""
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) > 20:
        raise CallRefused("error", "where must be a dict of at most 20 field: value pairs", "TypeError")
    for k, v in value.items():
        str_arg("where key", k, 100)
        items = v if isinstance(v, list) else [v]
        if len(items) > 50 or not all(x is None or isinstance(x, (str, int, float, bool)) for x in items):
            raise CallRefused("error", "where values must be strings, numbers or lists of them", "TypeError")
    return value


def check_path(path: Any, what: str = "path") -> str:
    """A vault-relative path, normalised; anything absolute, with ``..`` or NUL is refused."""
    raw = str_arg(what, path)
    assert raw is not None
    try:
        return normalize_note_path(raw)
    except PathOutsideVaultError as exc:
        raise CallRefused("blocked", f"{exc.message} ({exc.hint})", "PathOutsideVault") from None
    except ShadError as exc:
        raise CallRefused("error", exc.message, "ValueError") from None


def hidden_target(root: str, rel: str) -> str | None:
    """Why the file a vault-relative path names may not be read (its real path, after symlinks, is
    outside ``root`` or inside a hidden folder there such as ``.obsidian/``), or None when it may."""
    real = os.path.realpath(os.path.join(root, rel))
    prefix = root if root.endswith(os.sep) else root + os.sep  # a root of "/" ends with one already
    if not real.startswith(prefix):
        return "points outside"
    if any(part.startswith(".") for part in real[len(prefix) :].split(os.sep)):
        return "points into a hidden folder"
    return None


def link_text(name: str, value: Any) -> str | None:
    """Text for a wikilink's heading or alias: no characters that would change the link."""
    text = str_arg(name, value, 300, required=False)
    if text is not None and any(c in text for c in "[]|\n\r#^"):
        raise CallRefused("error", f"{name} may not contain [ ] | # ^ or newlines", "ValueError")
    return text
