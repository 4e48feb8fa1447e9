"""A note's bytes read into plain values: its frontmatter, body, links, headings, tags and block ids as
tuples, lists and strings. ``parse_note`` makes objects of them; the index stores them as they are (a
vault's first index build reads every note, and the objects cost more than a short note's parse).

What counts as a link, tag, heading or block id follows Obsidian: nothing inside fenced code, inline
code or ``%% comments %%``; ``\\|`` inside a table cell separates a link's target from its alias. An
HTML comment (``<!-- ... -->``) holds no heading either (templates keep their unused placeholders
there); links, tags and block ids in it count, as Obsidian counts them.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from operator import itemgetter
from pathlib import PurePosixPath
from typing import Any, NamedTuple
from urllib.parse import unquote

from ._frontmatter import split_frontmatter
from ._masking import SPACES, unseen
from ._model import Diagnostic

__all__ = [
    "HUGE_BYTES",
    "INDEXED_BODY_CHARS",
    "RELATION_FIELDS",
    "NoteParts",
    "read_file",
    "read_note",
    "split_link_text",
]

HUGE_BYTES = 1_000_000
INDEXED_BODY_CHARS = 1_000_000
MAX_PARSE_CHARS = 8_000_000
RELATION_FIELDS = ("derived_from", "supports", "contradicts", "references", "part_of")

# What a ``Link`` is made of, in its fields' order: target, heading, block, alias, embed, kind, field, line.
LinkParts = tuple[str, "str | None", "str | None", "str | None", bool, str, "str | None", int]
HeadingParts = tuple[int, str, int, int]  # level, text, line, offset: a ``Heading``'s fields


class NoteParts(NamedTuple):
    """A note as plain values; ``hidden``: the spans of its body a reader never sees (see ``read_note``)."""

    title: str
    frontmatter: dict[str, Any]
    body: str
    links: list[LinkParts]
    tags: list[str]
    headings: list[HeadingParts]
    aliases: list[str]
    blocks: dict[str, int]
    hash: str
    size: int
    diagnostics: list[Diagnostic]
    hidden: list[tuple[int, int]]


# A wikilink found by its brackets ("!" before them makes it an embed): a pattern that opens with the
# optional "!" is tried at every character, this one only at each "[[" (about 7x faster on a note). Its
# text runs to the first "]" (it holds none): greedy, it is found without trying each length in turn.
_WIKILINK_BRACKETS = re.compile(r"\[\[([^\[\]\n]+)\]\]")
_MDLINK = re.compile(r"(!?)\[([^\]\n]*)\]\(\s*(<[^>\n]+>|[^)\s]+)(?:\s+\"[^\"\n]*\")?\s*\)")
# The same link found by its bracket ("!" before it makes it an embed); see ``_markdown_links``.
_MDLINK_BRACKETS = re.compile(r"\[([^\]\n]*)\]\(\s*(<[^>\n]+>|[^)" + SPACES + r"]+)(?:\s+\"[^\"\n]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_NOTE_ADDRESS = re.compile(r"\]\((?![a-zA-Z][a-zA-Z0-9+.-]*:)")  # what may start a link to a note
# Both start with their literal ("#", "^") and look behind it for what may not precede it: the regex
# engine then jumps from one "#" to the next instead of trying the lookbehind at every character
# (about 30x faster on a note).
_TAG = re.compile(r"#(?<![\w/#&\\\[|]#)([^\W\d][\w/-]*|\d+[^\W\d][\w/-]*)")
# "#" at a line's start: the heading's text is the rest of its line, less the closing "#"s and blanks
# around them (cut in ``read_note``: a lazy pattern for it tries every length of the line in turn).
_HEADING = re.compile(r"(#(?<![^\n]#)#{0,5})[ \t]+([^\n]*)")
_BLOCK_ID = re.compile(r"\^(?<![^ \t\n]\^)([A-Za-z0-9-]+)[ \t]*$", re.M)  # at a line's start or after a blank
_BLOCK_SUFFIX = re.compile(r"\s+\^[A-Za-z0-9-]+$")


def read_note(path: str, raw: bytes, markup: bool = False, *, lines: bool = True) -> NoteParts:
    """The note ``raw`` at vault path ``path``; its ``hidden`` spans are the comments, and with ``markup``
    image addresses and HTML tags too: what the index leaves out. Without ``lines``, as the index keeps
    a note: its headings' line numbers are 0 and its block ids are not looked for (only a link's line is
    kept there; counting lines is a tenth of a note's parse)."""
    diagnostics: list[Diagnostic] = []
    size = len(raw)
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
    elif frontmatter and not body.strip():
        diagnostics.append(Diagnostic("frontmatter_only", "note has frontmatter but no body", "info"))

    masked, visible, hidden = unseen(body, markup)
    # (a character is looked for first: ``in`` finds one 20x faster than a longer string's absence)
    wikilinks = list(_WIKILINK_BRACKETS.finditer(masked)) if "[" in masked and "[[" in masked else []
    links = _body_links(body, masked, wikilinks, body_line)
    if frontmatter:
        links += _frontmatter_links(frontmatter)
    headings: list[HeadingParts] = []
    tags: list[str] = []
    if "#" in masked:
        line, pos = (body_line, 0) if lines else (0, -1)
        for m in _HEADING.finditer(visible):
            start = m.start()
            if pos >= 0:
                line += body.count("\n", pos, start)
                pos = start
            heading = m.group(2)
            if heading[-1:] in " \t#":  # (also when empty)
                heading = heading.rstrip(" \t").rstrip("#").rstrip(" \t")
            if "^" in heading:
                heading = _BLOCK_SUFFIX.sub("", heading)
            headings.append((m.end(1) - start, heading, line, start))
        tags = _inline_tags(masked, wikilinks)
    blocks: dict[str, int] = {}
    if lines and "^" in masked:
        line, pos = body_line, 0
        for m in _BLOCK_ID.finditer(masked):
            start = m.start(1)
            line += body.count("\n", pos, start)
            pos = start
            blocks[m.group(1)] = line
    if "tags" in frontmatter or "tag" in frontmatter:  # (a tag found in the body has no "#" to strip)
        tags += _frontmatter_list(frontmatter, "tags", "tag")
        tags = [t.lstrip("#") for t in dict.fromkeys(tags) if t.lstrip("#")]
    aliases = (
        _frontmatter_list(frontmatter, "aliases", "alias")
        if "aliases" in frontmatter or "alias" in frontmatter
        else []
    )
    return NoteParts(
        _stem(path),
        frontmatter,
        body,
        links,
        list(dict.fromkeys(tags)),
        headings,
        aliases,
        blocks,
        hashlib.sha256(raw).hexdigest(),
        size,
        diagnostics,
        hidden,
    )


def read_file(path: str, size: int) -> bytes:
    """The file's bytes, ``size`` (as last seen: it may have changed since) read at once: a file object
    costs about as much as a short note's parse. A regular file read short is read to its end."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, size + 1)
        if len(data) <= size:
            return data
        more = [data]
        while more[-1]:
            more.append(os.read(fd, max(size, 1 << 16)))
        return b"".join(more)
    finally:
        os.close(fd)


def _stem(path: str) -> str:
    """``PurePosixPath(path).stem``, from the string: a path object costs more than the rest of a short
    note's name handling. Odd paths (empty, ``//``, a trailing ``/`` or ``.``) are left to pathlib."""
    name = path.rpartition("/")[2]
    if not name or name == "." or "//" in path or path.endswith("/"):
        return PurePosixPath(path).stem
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _decode(raw: bytes, diagnostics: list[Diagnostic]) -> str:
    if b"\x00" in raw[:8192]:
        diagnostics.append(
            Diagnostic("binary", "file holds binary data (NUL bytes); content skipped", "error")
        )
        return ""
    try:
        # ("utf-8-sig" without its Python-level codec: a byte order mark is skipped, offsets count after it)
        return (raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        diagnostics.append(
            Diagnostic(
                "non_utf8",
                f"not valid UTF-8 (first bad byte at offset {exc.start}); undecodable bytes replaced",
                "warning",
            )
        )
        return raw.decode("utf-8", errors="replace")


def _inline_tags(masked: str, wikilinks: list[re.Match[str]]) -> list[str]:
    """The tags written in the body (``masked``: code and comments blanked), lower-cased, in order."""
    found = list(_TAG.finditer(masked))
    if not found:
        return []  # (taking links out below never makes a tag: the "#" after one is one either way)
    if "]" in masked and "](#" in masked:
        # "[x](#heading)" is a link, not a tag; taking such links out can make a wikilink of the text
        # around them, so the text is rewritten as a whole.
        text = _MDLINK.sub(" ", masked)
        if "|" in text and "[[" in text:
            text = _WIKILINK_BRACKETS.sub(" ", text)
        return [m.group(1).lower() for m in _TAG.finditer(text)]
    if wikilinks and "|" in masked:
        # Nor is "#x" in a link's display text "[[Note|about #x]]": the tags inside a wikilink are left
        # out (no tag runs into or out of one: a tag holds no "[" or "]").
        spans = iter([m.span() for m in wikilinks])
        link_start, link_end = next(spans)
        kept: list[str] = []
        for m in found:
            at = m.start()
            while at >= link_end:
                link_start, link_end = next(spans, (len(masked), len(masked) + 1))
            if at < link_start:
                kept.append(m.group(1).lower())
        return kept
    return [m.group(1).lower() for m in found]


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
    return list(dict.fromkeys(out))


# --- links -----------------------------------------------------------------------------------------------


@lru_cache(maxsize=8192)  # (a vault links to some of its notes from many others)
def split_link_text(inner: str) -> tuple[str, str | None, str | None, str | None]:
    """Split the inside of ``[[...]]`` into (target, heading, block, alias)."""
    alias: str | None = None
    if "|" in inner:
        head, _, alias = inner.partition("|")
        head = head[:-1] if head.endswith("\\") else head
        inner = head
        alias = alias.strip() or None
    if "#" not in inner:
        return inner.strip(), None, None, alias
    target, _, sub = inner.partition("#")
    heading: str | None = None
    block: str | None = None
    sub = sub.strip()
    if sub.startswith("^"):
        block = sub[1:] or None
    elif sub:
        heading = sub.split("#")[-1].strip() or None
    return target.strip(), heading, block, alias


def _body_links(body: str, masked: str, wikilinks: list[re.Match[str]], first_line: int) -> list[LinkParts]:
    """The links of ``body`` (``masked``: code and comments blanked), in the order written: ``wikilinks``
    (their matches) and Markdown links."""
    # (most Markdown links are to web pages, which are not kept: when every "](" opens an address with a
    # scheme, no link is to a note, and the links need not be found)
    markdown = _markdown_parts(masked) if "]" in masked and _NOTE_ADDRESS.search(masked) else None
    links: list[LinkParts] = []
    line, pos = first_line, 0
    if not markdown:  # (most notes: the links are the wikilinks, in order)
        for m in wikilinks:
            start = m.start()
            embed = start > 0 and masked[start - 1] == "!"
            start -= embed
            line += body.count("\n", pos, start)
            pos = start
            target, heading, block, alias = split_link_text(m.group(1))
            links.append((target, heading, block, alias, embed, "wikilink", None, line))
        return links
    found = []
    for m in wikilinks:
        start = m.start()
        embed = start > 0 and masked[start - 1] == "!"
        found.append((start - embed, *split_link_text(m.group(1)), embed, "wikilink"))
    # (no two links start at one offset: a wikilink's first "]" is followed by "]", a link's by "(")
    for offset, target, heading, block, alias, embed, kind in sorted(found + markdown, key=itemgetter(0)):
        line += body.count("\n", pos, offset)
        pos = offset
        links.append((target, heading, block, alias, embed, kind, None, line))
    return links


def _markdown_parts(masked: str) -> list[tuple[int, str, str | None, str | None, str | None, bool, str]]:
    """The Markdown links to notes (not web addresses) as (offset, target, heading, block, alias, embed,
    kind)."""
    found = []
    for m in _markdown_links(masked):
        url = m.group(2).strip("<>")
        if url == "#" or _SCHEME.match(url):
            continue
        path, _, sub = unquote(url).partition("#")
        heading = block = None
        if sub.startswith("^"):
            block = sub[1:]
        elif sub:
            heading = sub
        start = m.start()
        embed = start > 0 and masked[start - 1] == "!"
        found.append((start - embed, path, heading, block, m.group(1) or None, embed, "markdown"))
    return found


def _markdown_links(text: str) -> list[re.Match[str]]:
    """``list(_MDLINK_BRACKETS.finditer(text))``, found faster: the regex is tried at every "[" (a note has
    many: each wikilink has two), this tries it only where a link can start. A link's text holds no "]"
    or line break, so the one whose text ends at a "](" starts at the first "[" after the "]" or line
    break before it (and after the link found before), or nowhere: a later "[" would reach the same
    "](" and fail or succeed with it."""
    found: list[re.Match[str]] = []
    end = 0  # where the last link found ends
    at = text.find("](")
    while at >= 0:
        start = max(text.rfind("]", end, at), text.rfind("\n", end, at)) + 1
        bracket = text.find("[", max(start, end), at)
        m = _MDLINK_BRACKETS.match(text, bracket) if bracket >= 0 else None
        if m is not None:
            found.append(m)
            end = m.end()
            at = text.find("](", end)
        else:
            at = text.find("](", at + 1)
    return found


def _frontmatter_links(frontmatter: dict[str, Any]) -> list[LinkParts]:
    links: list[LinkParts] = []
    for key, value in frontmatter.items():
        relation = key in RELATION_FIELDS
        if relation or not isinstance(value, str) or "[[" in value:  # (most values: plain words)
            _value_links(key, value, relation, links)
    return links


def _value_links(key: str, value: Any, relation: bool, links: list[LinkParts]) -> None:
    """The links in a frontmatter value (under top-level ``key``, a relation or not), added to ``links``."""
    if isinstance(value, str):
        # (found by its brackets, and only in a value that has them: most values are plain words)
        if "[[" in value:
            matches = list(_WIKILINK_BRACKETS.finditer(value))
            for m in matches:
                links.append((*split_link_text(m.group(1)), False, "frontmatter", key, 0))
            if matches:
                return
        if relation and value.strip() and not _SCHEME.match(value.strip()):
            links.append((value.strip(), None, None, None, False, "frontmatter", key, 0))
    elif isinstance(value, dict):
        for v in value.values():
            _value_links(key, v, relation, links)
    elif isinstance(value, list):
        for v in value:
            if relation or not isinstance(v, str) or "[[" in v:
                _value_links(key, v, relation, links)
