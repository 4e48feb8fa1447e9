"""Frontmatter read by hand: the simple kind most notes have, which YAML would read the same way, at a
fraction of its cost (see ``_simple``)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import yaml

__all__ = ["placeholder_line"]

# The frontmatter most notes have: ``key: value`` lines and ``key:`` followed by ``- value`` items, where
# each value is a one-line plain scalar that YAML reads as text, a ``true``/``false``, a decimal integer or
# a date (``2024-01-02``), a double-quoted string without escapes (``"[[Link]]"``), a flow list of plain
# words (``[a, b]``), ``[]``, or nothing (``- `` alone, an empty list item as templates leave under
# ``tags:``, is None); spaces may follow a value. Read by hand, it gives what YAML gives
# (tests/test_frontmatter.py checks that on every real vault), at a fraction of the cost: YAML was about
# half of a note's parse time.
# What a plain scalar means is decided by YAML's own resolvers (``_tag``); anything else goes to YAML.
_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
# Printable in YAML's sense, no escapes, no line breaks (YAML folds those): the text between the quotes.
_QUOTED = re.compile('"[^"\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]*"\\Z')
# Characters a one-line plain scalar holds as themselves: printable ASCII but the tab, and non-ASCII but
# C1 controls (NEL breaks a line), the line and paragraph separators, surrogates, the BOM, non-characters.
_PLAIN_CHARS = re.compile("[ -~\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*\\Z")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@` ")  # a plain scalar cannot start with these (nor a space)
_FLOW_INDICATORS = frozenset(",[]{}:#?")  # nor hold these inside a flow list (left to YAML there)
_YAML_WORDS = frozenset({"yes", "no", "true", "false", "on", "off", "null", "y", "n"})
_NOT_SIMPLE = object()
# Only the spellings YAML 1.1 reads so (``tRue`` is text, ``yes``/``on`` go to YAML).
_BOOLEANS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_DECIMAL = re.compile(r"(?:0|[1-9][0-9]{0,17})\Z")  # no sign, no leading zero (octal), no "_" or ":"
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
# (the loader ``_frontmatter`` reads with adds constructors, not resolvers: these are its resolvers too)
_RESOLVERS: dict[str | None, list[tuple[str, re.Pattern[str]]]] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
).yaml_implicit_resolvers
_TAG = "tag:yaml.org,2002:"


def _simple(block: str, *, plain: bool = False) -> dict[str, Any] | None:
    """``block`` read by hand when it is the simple kind above; None when YAML must read it. ``plain``: dates
    as the text written (their ISO form), as ``_plain`` stores them."""
    slot = 3 if plain else 2
    data: dict[str, Any] = {}
    key: str | None = None  # the key whose list is being read
    indent: str | None = None
    for line in block.split("\n"):
        if not line:
            continue
        read = _LINES.get(line) or _remember(line)
        kind = read[0]
        if kind == _ITEM:
            if key is None or (indent is not None and read[1] != indent):
                return None
            indent = read[1]
            value = read[slot]
            data[key].append(list(value) if type(value) is tuple else value)
        elif kind == _KEY:
            if key is not None and not data[key]:
                data[key] = None  # ``key:`` with nothing under it
            key, indent = None, None
            name, value = read[1], read[slot]
            if value is _LIST_FOLLOWS:
                key = name
                data[name] = []
            else:
                data[name] = list(value) if type(value) is tuple else value
        else:
            return None
    if key is not None and not data[key]:
        data[key] = None
    return data


# What a line of a simple block says, remembered: lines repeat across a vault's notes ("publish: true",
# "  - programming", "created: 2023-09-12"), and reading one is most of a simple block's cost.
_ITEM, _KEY, _OTHER = 0, 1, 2
_LIST_FOLLOWS = object()  # ``key:`` with nothing after it: a list may follow
_NOT_A_LINE: tuple[Any, ...] = (_OTHER,)
_LINES: dict[str, tuple[Any, ...]] = {}
_MAX_LINES = 20_000  # remembered at most (then forgotten all at once)


def _remember(line: str) -> tuple[Any, ...]:
    """``_read_line(line)``, kept in ``_LINES``: a template's lines recur from note to note."""
    if len(_LINES) >= _MAX_LINES:
        _LINES.clear()
    read = _LINES[line] = _read_line(line)
    return read


def _read_line(line: str) -> tuple[Any, ...]:
    """(``_ITEM``, indent, value, stored value) for a ``- value`` line, (``_KEY``, key, value, stored value)
    for a ``key: value`` line, ``_NOT_A_LINE`` for one YAML must read. Value as ``_simple`` returns it,
    stored value as ``_plain`` makes it; a list is a tuple here (each note gets a list of its own)."""
    if line.lstrip(" ").startswith("- "):
        pad, _, item = line.partition("- ")
        value = None if not item.strip(" ") else _scalar(item.rstrip(" "))  # "- " alone: an empty item
        if pad.strip() or value is _NOT_SIMPLE:
            return _NOT_A_LINE
        return (_ITEM, pad, *_both(value))
    name, sep, rest = line.partition(":")
    if not sep or not _SIMPLE_KEY.match(name) or name.lower() in _YAML_WORDS:
        return _NOT_A_LINE
    if not rest.strip(" "):  # ``key:`` (trailing spaces too): a list follows, or nothing
        return (_KEY, name, _LIST_FOLLOWS, _LIST_FOLLOWS)
    if rest == " []":
        return (_KEY, name, (), ())
    # (spaces after a value are not part of it)
    if rest.startswith(" ") and (value := _scalar(rest[1:].rstrip(" "))) is not _NOT_SIMPLE:
        return (_KEY, name, *_both(value))
    return _NOT_A_LINE


def _both(value: Any) -> tuple[Any, Any]:
    """A scalar or flow list as ``_simple`` returns it and as ``_plain`` stores it (lists as tuples)."""
    if type(value) is list:
        return tuple(value), tuple(v.isoformat() if type(v) is dt.date else v for v in value)
    return value, value.isoformat() if type(value) is dt.date else value


def _scalar(text: str) -> Any:
    """The value of a one-line plain scalar (see ``_plain_scalar``), an escape-free double-quoted string
    or a flow list of plain scalars; ``_NOT_SIMPLE`` otherwise."""
    if text.startswith('"'):
        return text[1:-1] if _QUOTED.match(text) else _NOT_SIMPLE
    if text.startswith("[") and text.endswith("]") and len(text) > 2:
        items = [_plain_scalar(item.strip(" "), flow=True) for item in text[1:-1].split(",")]
        return _NOT_SIMPLE if any(item is _NOT_SIMPLE for item in items) else items
    return _plain_scalar(text)


def _plain_scalar(text: str, *, flow: bool = False) -> Any:
    """What YAML reads the one-line plain scalar ``text`` as (in a block mapping or list, or with
    ``flow`` as an item of a ``[...]`` list): text, a boolean spelled ``true``/``false``, a decimal
    integer or a date; ``_NOT_SIMPLE`` when ``text`` is no such scalar or YAML makes it something else."""
    if (
        not text
        or text[0] in _INDICATORS
        or text[-1] in " :"  # trailing spaces are not part of it; "x:" starts a mapping
        or "  " in text
        or ": " in text  # starts a mapping
        or " #" in text  # starts a comment
        or not _PLAIN_CHARS.match(text)
        or (flow and not _FLOW_INDICATORS.isdisjoint(text))
    ):
        return _NOT_SIMPLE
    tag = _tag(text)
    if tag is None:
        return text
    if tag == _TAG + "bool" and text in _BOOLEANS:
        return _BOOLEANS[text]
    if tag == _TAG + "int" and _DECIMAL.match(text):
        return int(text)
    if tag == _TAG + "timestamp" and _DATE.match(text):
        try:
            return dt.date(int(text[:4]), int(text[5:7]), int(text[8:]))
        except ValueError:  # shaped like a date, but no such day: YAML's loader keeps it as text
            return _NOT_SIMPLE
    return _NOT_SIMPLE


def _tag(text: str) -> str | None:
    """The type YAML's resolvers give the plain scalar ``text`` (None: a string), as the loader does."""
    for tag, pattern in _RESOLVERS.get(text[0], []):
        if pattern.match(text):
            return tag
    for tag, pattern in _RESOLVERS.get(None, []):
        if pattern.match(text):
            return tag
    return None


# A template's placeholder, ``created: {{date}}``, where the note made from it gets its value: YAML reads
# ``{{date}}`` as a mapping whose key is a mapping, and fails to build it.
_PLACEHOLDER = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*): \{\{[A-Za-z_][A-Za-z0-9_]*\}\}\Z")


def placeholder_line(block: str) -> int | None:
    """For a block that ``_simple`` would read but for placeholder lines, the first one's line index (from
    0): YAML, loading the block, fails there ("found unhashable key"). It builds the top-level values in
    order, each collection after the mapping that holds it, and no other value of such a block fails.
    None for any other block (its lines hold no line break but ``\\n``: YAML counts lines the same)."""
    first: int | None = None
    key: str | None = None  # the key whose list may follow
    indent: str | None = None
    for i, line in enumerate(block.split("\n")):
        if not line:
            continue
        placeholder = _PLACEHOLDER.match(line)
        if placeholder is not None and placeholder.group(1).lower() not in _YAML_WORDS:
            if first is None:
                first = i
            key, indent = None, None
            continue
        read = _LINES.get(line) or _remember(line)
        if read[0] == _ITEM:
            if key is None or (indent is not None and read[1] != indent):
                return None
            indent = read[1]
        elif read[0] == _KEY:
            key = read[1] if read[2] is _LIST_FOLLOWS else None
            indent = None
        else:
            return None
    return first
