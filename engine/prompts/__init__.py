"""Prompt templates as files: ``render("answer", task=..., context=...)`` fills ``answer.txt``."""

from __future__ import annotations

import string
from functools import cache
from pathlib import Path

__all__ = ["render"]

_HERE = Path(__file__).parent


@cache
def _template(name: str) -> string.Template:
    return string.Template((_HERE / f"{name}.txt").read_text(encoding="utf-8"))


def render(name: str, **values: object) -> str:
    """Fill ``$placeholders``; a missing value is an error (a prompt must never go out half-filled)."""
    return _template(name).substitute({k: str(v) for k, v in values.items()})
