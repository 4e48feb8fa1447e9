"""Parse one Obsidian note from bytes, tolerantly: a broken note still loads, with a diagnostic.

What counts as a link, tag, heading or block id is read in ``_read`` (the Obsidian rules are described
there). An HTML comment's text is not indexed: a reader never sees it (templates keep their unused
placeholders there: a heading or a "Sponsor this author" line each of thousands of notes hides).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice, pairwise
from typing import Any, Literal, overload

from ._masking import unseen
from ._model import Heading, Link, Note
from ._properties import properties_text
from ._read import (
    HUGE_BYTES,
    INDEXED_BODY_CHARS,
    RELATION_FIELDS,
    LinkParts,
    NoteParts,
    read_file,
    read_note,
    split_link_text,
)
from ._read import _stem as _stem  # (the tests reach it here)

__all__ = [
    "CHUNK_CHARS",
    "HUGE_BYTES",
    "INDEXED_BODY_CHARS",
    "MAX_CHUNKS",
    "RELATION_FIELDS",
    "Chunk",
    "LinkParts",
    "NoteParts",
    "Passage",
    "indexed_text",
    "note_type",
    "parse_for_index",
    "parse_note",
    "read_file",
    "split_link_text",
]

CHUNK_CHARS = 1_200  # long sections are cut into passages of about this size
MAX_CHUNKS = 1_000  # passages per note; the rest joins the last one
_MIN_CHUNK = 40

Passage = tuple[str, str, "str | None"]  # a ``Chunk`` as the index stores it: trail, text, heading


def parse_note(path: str, raw: bytes, *, mtime: float = 0.0) -> Note:
    """Parse a note's bytes. ``path`` is vault-relative and POSIX."""
    return _note(path, read_note(path, raw), mtime)


@dataclass(frozen=True)
class Chunk:
    """A searchable passage: one section of a note (long sections are split at paragraphs)."""

    heading: str | None  # the nearest heading above the passage
    trail: str  # the heading chain, "Parent > Child"
    text: str


@overload
def parse_for_index(
    path: str, raw: bytes, *, mtime: float = 0.0, plain: Literal[False] = False
) -> tuple[Note, list[Chunk]]: ...


@overload
def parse_for_index(
    path: str, raw: bytes, *, mtime: float = 0.0, plain: Literal[True]
) -> tuple[NoteParts, list[Passage]]: ...


def parse_for_index(
    path: str, raw: bytes, *, mtime: float = 0.0, plain: bool = False
) -> tuple[Note, list[Chunk]] | tuple[NoteParts, list[Passage]]:
    """Parse a note and cut the text worth indexing into passages; ``plain``: the note's parts and the
    passages as plain values, as the index keeps them (objects cost more than a short note's parse; the
    parts' headings have no line numbers and there are no block ids: see ``read_note``).

    The indexed text leaves out what a reader of the note never sees: ``%% comments %%`` (Excalidraw keeps
    whole drawings there) and HTML comments, an image's address (``![alt](address)`` is indexed as its
    alt text: a plugin note's badges were a passage of image addresses) and HTML tags (their content
    stays). It stops at ``INDEXED_BODY_CHARS``.
    """
    parts = read_note(path, raw, markup=True, lines=not plain)
    passages = _passages(parts)
    if plain:
        return parts, passages
    return _note(path, parts, mtime), [Chunk(heading, trail, text) for trail, text, heading in passages]


def note_type(frontmatter: dict[str, Any]) -> str | None:
    """``Note.type`` of a note with this frontmatter."""
    value = frontmatter.get("type")
    if isinstance(value, list) and value:
        value = value[0]
    return str(value) if value not in (None, "") else None


def indexed_text(body: str) -> str:
    """``body`` as the index holds it, and a search hit's passage shows it: what a reader never sees
    (comments, image addresses, HTML tags) cut out."""
    hidden = sorted(unseen(body, True)[2])
    return _without(body, 0, len(body), hidden)


def _note(path: str, parts: NoteParts, mtime: float) -> Note:
    return Note(
        path=path,
        title=parts.title,
        frontmatter=parts.frontmatter,
        body=parts.body,
        links=[Link(*link) for link in parts.links],
        tags=parts.tags,
        headings=[Heading(*heading) for heading in parts.headings],
        aliases=parts.aliases,
        blocks=parts.blocks,
        hash=parts.hash,
        mtime=mtime,
        size=parts.size,
        diagnostics=parts.diagnostics,
    )


def _passages(parts: NoteParts) -> list[Passage]:
    """The note's passages: its sections (a heading with almost nothing under it joins the next one),
    long ones cut, its properties leading the first."""
    body = parts.body
    hidden = sorted(parts.hidden) if parts.hidden else None
    skipped = 0  # the hidden spans before it end before the section
    headings = parts.headings
    # (start, end, heading level, heading text); level 0: the text before the first heading
    sections = [(h[3], next_h[3], h[0], h[1]) for h, next_h in pairwise(headings)]
    if headings:
        sections.append((headings[-1][3], len(body), headings[-1][0], headings[-1][1]))
    first = headings[0][3] if headings else len(body)
    if first > 0:
        sections.insert(0, (0, first, 0, ""))
    last = len(sections) - 1
    levels: list[int] = []  # the heading chain above the section, by level (rising) and text
    titles: list[str] = []
    passages: list[Passage] = []
    budget = INDEXED_BODY_CHARS
    carry = ""
    for i, (start, end, level, title) in enumerate(sections):
        if level:
            while levels and levels[-1] >= level:
                levels.pop()
                titles.pop()
            levels.append(level)
            titles.append(title)
        if hidden is None:
            text = body[start:end]
        else:
            while skipped < len(hidden) and hidden[skipped][1] <= start:
                skipped += 1  # (a span that ends before this section ends before every later one)
            if skipped < len(hidden) and hidden[skipped][0] < end:
                text = _without(body, start, end, hidden, skipped)
            else:
                text = body[start:end]  # (the spans after ``skipped`` start after the section)
        if carry:
            text = carry + text
            carry = ""
        stripped = text.strip()
        if i != last and len(stripped) < _MIN_CHUNK:
            carry = text + "\n"  # a heading with (almost) nothing under it joins the next section
            continue
        if len(text) > budget:
            text = text[:budget]
            stripped = text.strip()
        budget -= len(text)
        heading, trail = (titles[-1], " > ".join(titles)) if level else (None, "")
        if len(text) <= CHUNK_CHARS:
            if stripped:
                passages.append((trail, text, heading))
        else:
            passages += [(trail, piece, heading) for piece in _split_long(text) if piece.strip()]
        if budget <= 0:
            break
    properties = properties_text(parts.frontmatter, body) if parts.frontmatter else ""
    if properties:  # the facts kept in properties lead the note's first passage, as Obsidian shows them
        if passages and passages[0][2] is None:
            passages[0] = (passages[0][0], properties + "\n" + passages[0][1], None)
        else:
            passages.insert(0, ("", properties, None))
    if len(passages) > MAX_CHUNKS:
        tail = "\n".join(p[1] for p in passages[MAX_CHUNKS - 1 :])
        kept = passages[MAX_CHUNKS - 1]
        passages = [*passages[: MAX_CHUNKS - 1], (kept[0], tail, kept[2])]
    if not passages:
        passages.append(("", "", None))
    return passages


def _without(body: str, start: int, end: int, hidden: list[tuple[int, int]], first: int = 0) -> str:
    """``body[start:end]`` with the ``hidden`` spans (sorted; those before ``first`` end before ``start``)
    cut out."""
    if not hidden:
        return body[start:end]
    parts, pos = [], start
    for h_start, h_end in islice(hidden, first, None):
        if h_start >= end:
            break  # (and every span after it)
        if h_end <= pos:
            continue
        parts.append(body[pos : max(pos, h_start)])
        pos = max(pos, min(h_end, end))
    parts.append(body[pos:end])
    return " ".join(parts)


# A blank line (or lines): where a paragraph ends (its first line break stays with it).
_BLANK_LINES = re.compile(r"\n\s*\n")


def _paragraphs(text: str) -> list[str]:
    """``re.split(r"(?<=\\n)\\s*\\n", text)``: the same splits, found from each line break (a pattern that
    opens with a lookbehind is tried at every character, about 3x slower)."""
    pieces = _BLANK_LINES.split(text)
    return [piece + "\n" for piece in pieces[:-1]] + pieces[-1:]


def _split_long(text: str) -> list[str]:
    if len(text) <= CHUNK_CHARS:
        return [text]
    pieces: list[str] = []
    current = ""
    for para in _paragraphs(text):
        while len(para) > CHUNK_CHARS:
            cut = para.rfind(" ", 0, CHUNK_CHARS)
            cut = cut if cut > CHUNK_CHARS // 2 else CHUNK_CHARS
            if current:
                pieces.append(current)
                current = ""
            pieces.append(para[:cut])
            para = para[cut:]
        if len(current) + len(para) > CHUNK_CHARS and current:
            pieces.append(current)
            current = ""
        current += para + "\n"
    if current.strip():
        pieces.append(current)
    return pieces
