"""A procedure quoted whole. "How do I release my plugin?" is answered by a numbered list of steps; quoting
the one step that shares most words with the question ("Push the new tag to GitHub") leaves out the step
that does the work ("use `git tag <version>`"). ``procedure`` gives the whole list that holds a step, in
order (each step with its own number; a nested item after its step, marked "–"), so the offline answer
quotes it as one passage. Its numbers are the note's own: a quote states no number the note does not.
"""

from __future__ import annotations

import re

from ._offline_units import BLOCK_ID as _BLOCK_ID  # the passages' own block-id pattern
from ._offline_units import display_text

__all__ = ["MAX_LISTED", "MAX_STEPS", "listed_items", "procedure"]

MAX_STEPS = 12
MAX_LISTED = 20  # items of a list quoted whole ("### Plugins" of a person's note)
_ITEM = re.compile(r"^(\s*)(?:(\d{1,3})[.)]|[-*+])\s+(?:\[[ xX]\]\s+)?(.*)$")


def _item(line: str) -> tuple[int, str, str] | None:
    """(indentation, its number or "", text) of a list item line, or None."""
    m = _ITEM.match(line.expandtabs(4))
    if not m:
        return None
    return len(m.group(1)), m.group(2) or "", _BLOCK_ID.sub("", m.group(3)).strip()


def _line_of(lines: list[str], wanted: str) -> int | None:
    """The index of the list item line whose text is ``wanted`` (spaces normalised), or None."""
    return next(
        (k for k, line in enumerate(lines) if (it := _item(line)) and " ".join(it[2].split()) == wanted),
        None,
    )


def procedure(text: str, step: str) -> list[str]:
    """The numbered list of ``text`` that holds the item ``step`` (as a passage quotes it): its steps
    ("1. ...") and their nested items ("– ..."), at most ``MAX_STEPS``; [] when ``step`` is no item of a
    numbered list of at least two steps."""
    lines = display_text(text).split("\n")
    wanted = " ".join(step.split())
    at = _line_of(lines, wanted)
    if at is None:
        return []
    # the block: list items (and blank lines between them) around the step
    start = at
    while start > 0 and (
        _item(lines[start - 1]) or (start > 1 and not lines[start - 1].strip() and _item(lines[start - 2]))
    ):
        start -= 1
    block: list[tuple[int, str, str]] = []
    for line in lines[start:]:
        parsed = _item(line) if line.strip() else None
        if line.strip() and parsed is None:
            break
        if parsed is not None:
            block.append(parsed)
    top = min(indent for indent, _, _ in block)
    out: list[str] = []
    steps = 0
    for indent, number, item in block:
        if indent == top and not number:
            if steps:
                break  # a bullet after the steps: the procedure has ended
            continue  # a bullet before them
        if indent == top:
            steps += 1
            out.append(f"{number}. {item}")
        elif steps:
            out.append(f"– {item}")  # nested under the step before: no number of our own, none to check
    found = [k for k, line in enumerate(out) if " ".join(line.split(" ", 1)[1].split()) == wanted]
    if steps < 2 or not found:
        return []
    # a long procedure: the steps around the one asked about
    first = max(0, min(found[0] - MAX_STEPS // 2, len(out) - MAX_STEPS))
    return out[first : first + MAX_STEPS]


def listed_items(text: str, item: str) -> list[str]:
    """The items of the bulleted list of ``text`` that holds ``item`` (as a passage quotes it), its top
    level only, in order, at most ``MAX_LISTED``; [] when ``item`` is no item of a list of at least two.
    "List every plugin made by pjeby" is answered by the whole "### Plugins" list of his note, not by the
    three items a note may give at most."""
    lines = [line for line in display_text(text).split("\n") if line.strip()]
    at = _line_of(lines, " ".join(item.split()))
    if at is None:
        return []
    start, end = at, at
    while start > 0 and _item(lines[start - 1]):
        start -= 1
    while end + 1 < len(lines) and _item(lines[end + 1]):
        end += 1
    block = [parsed for line in lines[start : end + 1] if (parsed := _item(line)) is not None]
    top = min(indent for indent, _, _ in block)
    out = [text for indent, number, text in block if indent == top and not number and text]
    return out[:MAX_LISTED] if len(out) >= 2 else []
