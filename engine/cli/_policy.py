"""The checkpoint policy options shared by ``shad run``, ``resume`` and ``checkpoint``."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ..config import CHECKPOINT_POLICIES
from ..errors import UsageError

__all__ = ["default_policy", "policy_option"]


def default_policy(given: str | None, no_checkpoints: bool = False) -> str:
    """--no-checkpoints, else --checkpoints, else $SHAD_CHECKPOINTS, else ask on a terminal, else pause."""
    if no_checkpoints:
        return "off"
    value = given or os.environ.get("SHAD_CHECKPOINTS", "").strip().lower() or None
    # The notebook's policies: a terminal has no headless/interactive split to make, and failing is
    # what pausing does here (exit 4, nothing lost).
    value = {"auto": None, "fail": "pause"}.get(value or "", value)
    if value is None:
        return "ask" if sys.stdin.isatty() and sys.stderr.isatty() else "pause"
    if value not in CHECKPOINT_POLICIES:
        raise UsageError(
            f"unknown checkpoint policy {value!r}", hint=f"policies: {', '.join(CHECKPOINT_POLICIES)}"
        )
    return value


def policy_option(func: Any) -> Any:
    func = click.option(
        "--no-checkpoints", is_flag=True, help="Open no checkpoints: weak retrieval goes on unasked."
    )(func)
    return click.option(
        "--checkpoints",
        "checkpoint_policy",
        type=click.Choice(CHECKPOINT_POLICIES),
        help="At a checkpoint: ask (the default on a terminal), pause (the default otherwise: the run "
        "ends NEEDS_HUMAN, exit 4), approve, skip, or off. $SHAD_CHECKPOINTS sets the default.",
    )(func)
