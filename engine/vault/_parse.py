"""Parse one Obsidian note from bytes, tolerantly: a broken note still loads, with a diagnostic.

What counts as a link, tag, heading or block id follows Obsidian: nothing inside fenced code, inline
code or ``%% comments %%``; ``\\|`` inside a table cell separates a link's target from its alias. An
HTML comment (``<!-- ... -->``) holds no heading either, and its text is not indexed: a reader never sees
it (templates keep their unused placeholders there: a heading or a "Sponsor this author" line each of
thousands of notes hides). Links, tags and block ids in it count, as Obsidian counts them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

from ._frontmatter import split_frontmatter
from ._masking import unseen
from ._model import Diagnostic, Heading, Link, Note
from ._properties import properties_text

__all__ = [
    "CHUNK_CHARS",
    "HUGE_BYTES",
    "INDEXED_BODY_CHARS",
    "MAX_CHUNKS",
    "RELATION_FIELDS",
    "Chunk",
    "indexed_text",
    "parse_for_index",
    "parse_note",
    "split_link_text",
]

HUGE_BYTES = 1_000_000
INDEXED_BODY_CHARS = 1_000_000
MAX_PARSE_CHARS = 8_000_000
CHUNK_CHARS = 1_200  # long sections are cut into passages of about this size
MAX_CHUNKS = 1_000  # passages per note; the rest joins the last one
_MIN_CHUNK = 40
RELATION_FIELDS = ("derived_from", "supports", "contradicts", "references", "part_of")

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MDLINK = re.compile(r"(!?)\[([^\]\n]*)\]\(\s*(<[^>\n]+>|[^)\s]+)(?:\s+\"[^\"\n]*\")?\s*\)")
# The same link found by its bracket ("!" before it makes it an embed), tried only at each "[" (~8x faster).
_MDLINK_BRACKETS = re.compile(r"\[([^\]\n]*)\]\(\s*(<[^>\n]+>|[^)\s]+)(?:\s+\"[^\"\n]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# Both start with their literal ("#", "^") and look behind it for what may not precede it: the regex
# engine then jumps from one "#" to the next instead of trying the lookbehind at every character
# (about 30x faster on a note).
_TAG = re.compile(r"#(?<![\w/#&\\\[|]#)([^\W\d][\w/-]*|\d+[^\W\d][\w/-]*)")
_HEADING = re.compile(r"(#(?<![^\n]#)#{0,5})[ \t]+(.*?)[ \t]*#*[ \t]*$", re.M)  # "#" at a line's start
# A wikilink found by its brackets ("!" before them makes it an embed): a pattern that opens with the
# optional "!" is tried at every character, this one only at each "[[" (about 7x faster on a note).
_WIKILINK_BRACKETS = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
_BLOCK_ID = re.compile(r"\^(?<![^ \t\n]\^)([A-Za-z0-9-]+)[ \t]*$", re.M)  # at a line's start or after a blank
_BLOCK_SUFFIX = re.compile(r"\s+\^[A-Za-z0-9-]+$")


def parse_note(path: str, raw: bytes, *, mtime: float = 0.0) -> Note:
    """Parse a note's bytes. ``path`` is vault-relative and POSIX."""
    return _parse(path, raw, mtime)[0]


@dataclass(frozen=True)
class Chunk:
    """A searchable passage: one section of a note (long sections are split at paragraphs)."""

    heading: str | None  # the nearest heading above the passage
    trail: str  # the heading chain, "Parent > Child"
    text: str


def parse_for_index(path: str, raw: bytes, *, mtime: float = 0.0) -> tuple[Note, list[Chunk]]:
    """Parse a note and cut the text worth indexing into passages.

    The indexed text leaves out what a reader of the note never sees: ``%% comments %%`` (Excalidraw keeps
    whole drawings there) and HTML comments, an image's address (``![alt](address)`` is indexed as its
    alt text: a plugin note's badges were a passage of image addresses) and HTML tags (their content
    stays). It stops at ``INDEXED_BODY_CHARS``.
    """
    note, hidden = _parse(path, raw, mtime, markup=True)
    body = note.body
    hidden.sort()
    sections: list[tuple[int, int, list[str]]] = []  # (start, end, heading chain)
    chain: list[tuple[int, str]] = []
    bounds = [(h.offset, h.level, h.text) for h in note.headings]
    first = bounds[0][0] if bounds else len(body)
    if first > 0:
        sections.append((0, first, []))
    for i, (offset, level, text) in enumerate(bounds):
        chain = [c for c in chain if c[0] < level] + [(level, text)]
        end = bounds[i + 1][0] if i + 1 < len(bounds) else len(body)
        sections.append((offset, end, [t for _, t in chain]))
    chunks: list[Chunk] = []
    budget = INDEXED_BODY_CHARS
    carry = ""
    for start, end, trail in sections:
        text = carry + _without(body, start, end, hidden)
        carry = ""
        if len(text.strip()) < _MIN_CHUNK and (start, end, trail) != sections[-1]:
            carry = text + "\n"  # a heading with (almost) nothing under it joins the next section
            continue
        text = text[:budget]
        budget -= len(text)
        heading = trail[-1] if trail else None
        for piece in _split_long(text):
            if piece.strip():
                chunks.append(Chunk(heading, " > ".join(trail), piece))
        if budget <= 0:
            break
    properties = properties_text(note.frontmatter, note.body)
    if properties:  # the facts kept in properties lead the note's first passage, as Obsidian shows them
        if chunks and chunks[0].heading is None:
            chunks[0] = Chunk(None, chunks[0].trail, properties + "\n" + chunks[0].text)
        else:
            chunks.insert(0, Chunk(None, "", properties))
    if len(chunks) > MAX_CHUNKS:
        tail = "\n".join(c.text for c in chunks[MAX_CHUNKS - 1 :])
        chunks = [
            *chunks[: MAX_CHUNKS - 1],
            Chunk(chunks[MAX_CHUNKS - 1].heading, chunks[MAX_CHUNKS - 1].trail, tail),
        ]
    if not chunks:
        chunks.append(Chunk(None, "", ""))
    return note, chunks


def indexed_text(body: str) -> str:
    """``body`` as the index holds it, and a search hit's passage shows it: what a reader never sees
    (comments, image addresses, HTML tags) cut out."""
    hidden = sorted(unseen(body, True)[2])
    return _without(body, 0, len(body), hidden)


def _without(body: str, start: int, end: int, hidden: list[tuple[int, int]]) -> str:
    """``body[start:end]`` with the hidden spans (comments) cut out."""
    if not hidden:
        return body[start:end]
    parts, pos = [], start
    for h_start, h_end in hidden:
        if h_end <= pos or h_start >= end:
            continue
        parts.append(body[pos : max(pos, h_start)])
        pos = max(pos, min(h_end, end))
    parts.append(body[pos:end])
    return " ".join(parts)


def _split_long(text: str) -> list[str]:
    if len(text) <= CHUNK_CHARS:
        return [text]
    pieces: list[str] = []
    current = ""
    for para in re.split(r"(?<=\n)\s*\n", text):
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


def _parse(path: str, raw: bytes, mtime: float, markup: bool = False) -> tuple[Note, list[tuple[int, int]]]:
    """The note, and the spans of its body a reader never sees (comments; with ``markup``, also image
    addresses and HTML tags): what the index leaves out."""
    diagnostics: list[Diagnostic] = []
    size = len(raw)
    digest = hashlib.sha256(raw).hexdigest()
    title = _stem(path)
    text = _decode(raw, diagnostics)
    if "\r" in text:
        text = text.replace("\r\n", "\n")  # CRLF files: headings, fences and block ids end at "\n"
    if len(text) > MAX_PARSE_CHARS:
        diagnostics.append(
            Diagnostic(
                "truncated",
                f"note has {len(text):,} characters; only the first {MAX_PARSE_CHARS:,} were parsed",
                "warning",
            )
        )
        text = text[:MAX_PARSE_CHARS]
    if size >= HUGE_BYTES:
        diagnostics.append(
            Diagnostic(
                "huge",
                f"note is {size / 1e6:.1f} MB; the search index keeps its first "
                f"{INDEXED_BODY_CHARS // 1000:,} thousand characters",
                "info",
            )
        )

    frontmatter, body, body_line = split_frontmatter(text, diagnostics)
    if not text.strip():
        diagnostics.append(Diagnostic("empty", "note is empty", "info"))
    elif not body.strip() and frontmatter:
        diagnostics.append(Diagnostic("frontmatter_only", "note has frontmatter but no body", "info"))

    masked, visible, comments = unseen(body, markup)
    line_of = _LineCounter(body, body_line)
    links = _body_links(masked, line_of)
    links.extend(_frontmatter_links(frontmatter))
    has_hash = "#" in masked
    headings = [
        Heading(len(m.group(1)), _strip_block(m.group(2)), line_of(m.start()), m.start())
        for m in (_HEADING.finditer(visible) if has_hash else ())
    ]
    blocks = {m.group(1): line_of(m.start(1)) for m in _BLOCK_ID.finditer(masked)} if "^" in masked else {}
    inline_tags: list[str] = []
    if has_hash:
        # "[[#Heading]]" and "[x](#heading)" are links, not tags; "[" before "#" is excluded by _TAG.
        tag_text = _MDLINK.sub(" ", masked) if "](#" in masked else masked
        if "|" in tag_text and "[[" in tag_text:  # nor is "#x" in a link's display text "[[Note|about #x]]"
            tag_text = _WIKILINK_BRACKETS.sub(" ", tag_text)  # (an embed's "!" left: no tag needs it)
        inline_tags = [m.group(1).lower() for m in _TAG.finditer(tag_text)]
    tags = _unique(inline_tags + _frontmatter_list(frontmatter, "tags", "tag"))
    tags = [t.lstrip("#") for t in tags if t.lstrip("#")]
    aliases = _frontmatter_list(frontmatter, "aliases", "alias")
    note = Note(
        path=path,
        title=title,
        frontmatter=frontmatter,
        body=body,
        links=links,
        tags=_unique(tags),
        headings=headings,
        aliases=aliases,
        blocks=blocks,
        hash=digest,
        mtime=mtime,
        size=size,
        diagnostics=diagnostics,
    )
    return note, comments


def _stem(path: str) -> str:
    """``PurePosixPath(path).stem``, from the string: a path object costs more than the rest of a short
    note's name handling. Odd paths (empty, ``//``, a trailing ``/`` or ``.``) are left to pathlib."""
    name = path.rpartition("/")[2]
    if not name or name == "." or "//" in path or path.endswith("/"):
        return PurePosixPath(path).stem
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


# --- decoding and frontmatter ------------------------------------------------------------------------


def _strip_block(heading: str) -> str:
    return _BLOCK_SUFFIX.sub("", heading) if "^" in heading else heading


def _decode(raw: bytes, diagnostics: list[Diagnostic]) -> str:
    if b"\x00" in raw[:8192]:
        diagnostics.append(
            Diagnostic("binary", "file holds binary data (NUL bytes); content skipped", "error")
        )
        return ""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        diagnostics.append(
            Diagnostic(
                "non_utf8",
                f"not valid UTF-8 (first bad byte at offset {exc.start}); undecodable bytes replaced",
                "warning",
            )
        )
        return raw.decode("utf-8", errors="replace")


def _frontmatter_list(frontmatter: dict[str, Any], *keys: str) -> list[str]:
    out: list[str] = []
    for key in keys:
        value = frontmatter.get(key)
        if isinstance(value, str):
            parts = [p for p in re.split(r"[,\s]+", value) if p] if key.startswith("tag") else [value]
        elif isinstance(value, list):
            parts = [str(v) for v in value if v not in (None, "")]
        else:
            continue
        out.extend(p.strip() for p in parts if p.strip())
    if keys[0] == "tags":
        out = [p.lstrip("#").lower() for p in out]
    return _unique(out)


# --- links -----------------------------------------------------------------------------------------------


class _LineCounter:
    """Maps body offsets to 1-based file lines; offsets must be asked for in increasing order."""

    def __init__(self, body: str, first_line: int) -> None:
        self.body = body
        self.pos = 0
        self.line = first_line

    def __call__(self, offset: int) -> int:
        if offset < self.pos:
            self.pos, self.line = 0, self.line - self.body.count("\n", 0, self.pos)
        self.line += self.body.count("\n", self.pos, offset)
        self.pos = offset
        return self.line


def split_link_text(inner: str) -> tuple[str, str | None, str | None, str | None]:
    """Split the inside of ``[[...]]`` into (target, heading, block, alias)."""
    alias: str | None = None
    if "|" in inner:
        head, _, alias = inner.partition("|")
        head = head[:-1] if head.endswith("\\") else head
        inner = head
        alias = alias.strip() or None
    target, _, sub = inner.partition("#")
    heading: str | None = None
    block: str | None = None
    sub = sub.strip()
    if sub.startswith("^"):
        block = sub[1:] or None
    elif sub:
        heading = sub.split("#")[-1].strip() or None
    return target.strip(), heading, block, alias


def _body_links(masked: str, line_of: _LineCounter) -> list[Link]:
    found: list[tuple[int, Link]] = []
    if "[[" in masked:
        for m in _WIKILINK_BRACKETS.finditer(masked):
            target, heading, block, alias = split_link_text(m.group(1))
            start = m.start()
            embed = start > 0 and masked[start - 1] == "!"
            found.append((start - embed, Link(target, heading, block, alias, embed=embed)))
    if "](" in masked:
        for m in _MDLINK_BRACKETS.finditer(masked):
            url = m.group(2).strip("<>")
            if _SCHEME.match(url) or (url.startswith("#") and len(url) == 1):
                continue
            path, _, sub = unquote(url).partition("#")
            heading = block = None
            if sub.startswith("^"):
                block = sub[1:]
            elif sub:
                heading = sub
            start = m.start()
            embed = start > 0 and masked[start - 1] == "!"
            found.append(
                (start - embed, Link(path, heading, block, m.group(1) or None, embed=embed, kind="markdown"))
            )
    found.sort(key=lambda item: item[0])
    for offset, link in found:
        link.line = line_of(offset)
    return [link for _, link in found]


def _frontmatter_links(frontmatter: dict[str, Any]) -> list[Link]:
    links: list[Link] = []

    def walk(key: str, value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(key, v)
        elif isinstance(value, list):
            for v in value:
                walk(key, v)
        elif isinstance(value, str):
            # (found by its brackets, and only in a value that has them: most values are plain words)
            matches = list(_WIKILINK_BRACKETS.finditer(value)) if "[[" in value else []
            for m in matches:
                target, heading, block, alias = split_link_text(m.group(1))
                links.append(Link(target, heading, block, alias, kind="frontmatter", field=key))
            if not matches and key in RELATION_FIELDS and value.strip() and not _SCHEME.match(value.strip()):
                links.append(Link(value.strip(), kind="frontmatter", field=key))

    for key, value in frontmatter.items():
        walk(key, value)
    return links


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
