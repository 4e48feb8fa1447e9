"""Finding the task notes of a vault that are waiting to run, and what each asks for.

A task note is a note with ``type: task``. It waits to run when its ``status`` is ``pending`` and no
run was started for it yet (no ``run_id``). Its goal is the ``goal:`` field when that is non-blank text;
else the body's first paragraph — and when the body opens with a heading, that heading, ``: ``, and the
paragraph under it (``# Cold brew`` + ``How long should it steep?`` → ``Cold brew: How long should it
steep?``). Run options may be set per task: ``strategy``, ``max_depth``, ``max_nodes``, ``max_tokens``.

Loop prevention: nothing under ``Shad/`` is ever read (run history, reports, staging, scratch: what Shad
writes), nor a note whose ``created_by`` or ``proposed_by`` names Shad (an actor starting with ``shad`` or
a run id), nor hidden folders, symlinks and sync-conflict copies.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..vault import is_conflict_copy, parse_note

__all__ = ["TASK_OPTIONS", "Skipped", "TaskNote", "find_tasks", "task_goal"]

SHAD_FOLDER = "shad"  # the top-level folder Shad writes into (compared case-insensitively)
TASK_OPTIONS = ("strategy", "max_depth", "max_nodes", "max_tokens")
_RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{4}$")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class TaskNote:
    """A pending task: its vault-relative ``path``, ``goal``, per-task run ``options`` and the sha256 of
    the bytes it was read from (what the writer checks before it changes the note)."""

    path: str
    goal: str
    hash: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Skipped:
    """A note that looks like a pending task but is not run, and why."""

    path: str
    reason: str


def task_goal(frontmatter: dict[str, Any], body: str) -> str:
    """The ``goal:`` field, else the body's first paragraph (after its opening heading, if any)."""
    goal = frontmatter.get("goal")
    if isinstance(goal, str) and goal.strip():
        return " ".join(goal.split())
    heading, paragraph = "", list[str]()
    for line in body.splitlines():
        text = line.strip()
        if not text:
            if paragraph:
                break
            continue
        match = _HEADING.match(text)
        if match:
            if paragraph:
                break
            if not heading:
                heading = match.group(1).strip()
                continue
            break  # a second heading before any text: the first one alone is the goal
        paragraph.append(text)
    words = " ".join(paragraph)
    return f"{heading}: {words}" if heading and words else heading or words


def written_by_shad(frontmatter: dict[str, Any]) -> bool:
    """Does ``created_by`` / ``proposed_by`` name Shad (an actor ``shad …`` or a run id)?"""
    for key in ("created_by", "proposed_by"):
        value = str(frontmatter.get(key) or "").strip()
        if value.casefold().startswith("shad") or _RUN_ID.match(value):
            return True
    return False


def _is_task(frontmatter: dict[str, Any]) -> bool:
    kind = frontmatter.get("type")
    if isinstance(kind, list) and kind:
        kind = kind[0]
    return str(kind or "").strip().casefold() == "task"


def _markdown_files(root: Path) -> list[str]:
    """Vault-relative paths of the plain ``.md`` files, leaving out ``Shad/``, hidden folders, symlinks
    and sync-conflict copies."""
    found = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        rel_folder = Path(folder).relative_to(root).as_posix()
        top = rel_folder == "."
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and not (top and d.casefold() == SHAD_FOLDER)
            and not os.path.islink(os.path.join(folder, d))
        )
        for name in files:
            full = os.path.join(folder, name)
            if not name.lower().endswith(".md") or name.startswith(".") or os.path.islink(full):
                continue
            rel = name if top else f"{rel_folder}/{name}"
            if not is_conflict_copy(rel):
                found.append(rel)
    return sorted(found)


def find_tasks(root: str | Path) -> tuple[list[TaskNote], list[Skipped]]:
    """The pending task notes of the vault at ``root`` (sorted by path), and pending-looking ones that
    are left alone (a ``run_id`` is set, or Shad wrote them)."""
    base = Path(root)
    tasks, skipped = [], []
    for rel in _markdown_files(base):
        try:
            raw = (base / rel).read_bytes()
        except OSError:
            continue  # gone (or unreadable) since the folder was listed
        if b"task" not in raw[:65536].lower():
            continue  # cheap: a task's frontmatter says so near the top
        note = parse_note(rel, raw)
        front = note.frontmatter
        if not _is_task(front) or str(front.get("status") or "").strip().casefold() != "pending":
            continue
        if written_by_shad(front):
            skipped.append(Skipped(rel, "written by Shad (created_by/proposed_by): never run"))
            continue
        if front.get("run_id"):
            skipped.append(Skipped(rel, f"run_id {front['run_id']} is set: a run was started for it already"))
            continue
        options = {k: front[k] for k in TASK_OPTIONS if front.get(k) is not None}
        digest = hashlib.sha256(raw).hexdigest()
        tasks.append(TaskNote(rel, task_goal(front, note.body), digest, options))
    return tasks, skipped
