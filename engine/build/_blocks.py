"""Files out of markdown: the fenced code blocks that name a path, in a model's reply or in a vault note.

The convention asked of models (and used by pattern notes in a vault) is the title of Obsidian and MkDocs
code blocks: ```` ```python title="pkg/models.py" ````. Models do not always follow it, so the other ways
people name a block's file are read too: ``path=``/``file=`` in the info string, a bare path after the
language (```` ```python pkg/models.py ````), a line just above the block that is only a path (``pkg/x.py``,
`` `pkg/x.py` ``, ``**pkg/x.py**``, ``### pkg/x.py``, ``File: pkg/x.py``), or a first-line comment
(``# path: pkg/x.py``, ``// file: src/x.ts``). A block that names no file is an illustration, not a file.
``contract_change_request`` blocks are requests to change the contracts, not files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CHANGE_REQUEST", "FileBlock", "blocks_from_notes", "change_requests", "file_blocks"]

CHANGE_REQUEST = "contract_change_request"

# Up to 3 spaces of indentation (CommonMark; 4 make an indented code block, not a fence).
_FENCE = re.compile(r"^(?P<indent>[ ]{0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")
_TITLE = re.compile(r"""\b(?:title|path|file|filename)\s*[=:]\s*(?:"([^"]+)"|'([^']+)'|(\S+))""")
# A file name: its extension starts with a letter (so "v1.2" or "1.0" above a block is not a path).
_PATHLIKE = re.compile(r"^[\w.\-/@+]*\.[A-Za-z]\w*$|^(?:Dockerfile|Makefile|LICENSE)$", re.IGNORECASE)
_LINE_ABOVE = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*)?(?:(?:file|path|filename)\s*:\s*)?(?:\*\*)?\s*"
    r"`?(?P<path>[^`*\s]+)`?(?:\*\*)?:?\s*$",
    re.IGNORECASE,
)
_FIRST_LINE = re.compile(
    r"^\s*(?:#|//|--|/\*|<!--)\s*(?:file|path|filename)\s*:\s*(?P<path>\S+?)\s*(?:\*/|-->)?\s*$"
)


@dataclass(frozen=True)
class FileBlock:
    """One file: its path as written, the language the fence names (may be empty), its text and where the
    block starts (1-based line of the opening fence)."""

    path: str
    language: str
    content: str
    line: int


def _blocks(text: str) -> list[tuple[str, str, int, str]]:
    """(info string, body, opening line, the nearest non-blank line above) of every fenced block."""
    lines = text.splitlines()
    found: list[tuple[str, str, int, str]] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group("fence"), m.group("info").strip(), i
        indent = len(m.group("indent"))
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = _FENCE.match(lines[i])
            if (
                close
                and close.group("fence")[0] == fence[0]
                and len(close.group("fence")) >= len(fence)
                and not close.group("info").strip()
            ):
                break
            line = lines[i]
            # the fence's own indentation is not the code's (CommonMark strips it from every line)
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        above = next((lines[j] for j in range(start - 1, max(start - 3, -1), -1) if lines[j].strip()), "")
        found.append((info, "\n".join(body), start + 1, above))
        i += 1
    return found


def _path_from_info(info: str) -> tuple[str, str]:
    """(language, path or "") from a fence's info string."""
    m = _TITLE.search(info)
    words = info.split()
    language = words[0].lower() if words and "=" not in words[0] and ":" not in words[0] else ""
    if m:
        return language, next(g for g in m.groups() if g)
    if ":" in (words[0] if words else "") and "=" not in words[0]:  # ```python:pkg/x.py
        lang, _, path = words[0].partition(":")
        if _PATHLIKE.match(path):
            return lang.lower(), path
    if len(words) >= 2 and _PATHLIKE.match(words[1]):
        return language, words[1]
    if len(words) == 1 and _PATHLIKE.match(words[0]) and "/" in words[0]:  # ```pkg/x.py
        return "", words[0]
    return language, ""


def file_blocks(text: str) -> list[FileBlock]:
    """Every fenced block of ``text`` that names a file, in order. Paths are kept exactly as written (the
    manifest's integrity check judges them), except for surrounding quotes and a leading ``./``."""
    out: list[FileBlock] = []
    for info, body, line, above in _blocks(text):
        language, path = _path_from_info(info)
        if language.lower() == CHANGE_REQUEST:
            continue
        if not path:
            first = body.split("\n", 1)[0]
            m = _FIRST_LINE.match(first)
            if m:
                path, body = m.group("path"), body.split("\n", 1)[1] if "\n" in body else ""
            else:
                m = _LINE_ABOVE.match(above)
                if m and _PATHLIKE.match(m.group("path")):
                    path = m.group("path")
        if not path:
            continue
        path = path.strip("\"'")
        while path.startswith("./"):
            path = path[2:]
        out.append(FileBlock(path, language, body + "\n" if body and not body.endswith("\n") else body, line))
    return out


def change_requests(text: str) -> list[str]:
    """The text of every ``contract_change_request`` block (and of lines that start with
    ``CONTRACT_CHANGE_REQUEST:``, for replies that ignore the fence)."""
    found: list[str] = []
    for info, body, _, _ in _blocks(text):
        if info.split()[:1] and info.split()[0].lower() == CHANGE_REQUEST and body.strip():
            found.append(_without_prefix(body.strip()))
    inside = "\n".join(found)
    for line in text.splitlines():
        rest = _without_prefix(line.strip())
        if rest != line.strip() and rest and rest not in inside:
            found.append(rest)
    return found


def _without_prefix(text: str) -> str:
    """``CONTRACT_CHANGE_REQUEST: add x`` -> ``add x``; other text unchanged."""
    head, sep, rest = text.partition(":")
    if sep and head.strip().strip("*`").lower() == CHANGE_REQUEST:
        return rest.strip()
    return text


def blocks_from_notes(notes: list[tuple[str, str]]) -> list[tuple[FileBlock, str]]:
    """The file blocks of vault notes given as (wikilink, text), most relevant note first; a path two notes
    both give is taken from the first (each file cites the one note it came from)."""
    seen: set[str] = set()
    out: list[tuple[FileBlock, str]] = []
    for link, text in notes:
        for block in file_blocks(text):
            if block.path not in seen:
                seen.add(block.path)
                out.append((block, link))
    return out
