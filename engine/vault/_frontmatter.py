"""Frontmatter: the YAML between the ``---`` lines, loaded safely and tolerantly. Invalid YAML keeps the
fields that parse on their own; values no index can hold are kept as the text written; alias bombs and
too-deep nesting are refused, the same way on every PyYAML version (with or without libyaml)."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
from typing import Any

import yaml

from ._model import Diagnostic
from ._simple_frontmatter import _simple as _simple  # (the tests reach it here)
from ._simple_frontmatter import placeholder_line

__all__ = ["MAX_FRONTMATTER_DEPTH", "MAX_FRONTMATTER_NODES", "split_frontmatter"]

MAX_FRONTMATTER_NODES = 20_000
MAX_FRONTMATTER_DEPTH = 64  # nesting deeper than this (or a recursive YAML alias) is refused

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Integers longer than this many bits (about 3,900 digits) are kept as text: well inside Python's
# 4,300-digit limit on int <-> str conversion, beyond which str() and json.dumps() raise.
MAX_INT_BITS = 13_000


class _AsText(str):
    """A frontmatter scalar that YAML would make a value no index can hold (NaN, infinity, an integer
    of thousands of digits, a date that does not exist): kept as the text written, with the reason."""

    reason: str


def _as_text(node: Any, reason: str) -> _AsText:
    text = _AsText(node.value)
    text.reason = reason
    return text


class _Loader(_BaseLoader):  # type: ignore[misc]
    """YAML's safe loader, except that a scalar whose value cannot be stored (as JSON, in SQLite) or
    cannot even be built stays the string it was written as (see ``_AsText``): one bad value in one
    note must not break indexing the vault."""


def _int_or_text(loader: Any, node: Any) -> Any:
    try:
        value = yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
    except ValueError:  # more than 4,300 decimal digits: int() itself refuses
        return _as_text(node, "an integer too long to store")
    if value.bit_length() > MAX_INT_BITS:  # 0x..., 0b..., 1:2:3 forms build it; str() would refuse
        return _as_text(node, "an integer too long to store")
    return value


def _float_or_text(loader: Any, node: Any) -> Any:
    value = yaml.constructor.SafeConstructor.construct_yaml_float(loader, node)
    # NaN and infinity have no JSON form (json.dumps writes NaN, which SQLite's JSON functions reject).
    return value if math.isfinite(value) else _as_text(node, "not a finite number")


def _timestamp_or_text(loader: Any, node: Any) -> Any:
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):  # 2024-13-45: shaped like a date, but no such day
        return _as_text(node, "not a valid date")


_Loader.add_constructor("tag:yaml.org,2002:int", _int_or_text)
_Loader.add_constructor("tag:yaml.org,2002:float", _float_or_text)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_or_text)


_FRONTMATTER = re.compile(r"\A---[ \t]*\n(|.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
# ``_FRONTMATTER`` in two steps: its opening line, then the first closing line after it, found from the
# line break before it (the lazy ``.*?`` tries the closing line at every character of the block).
_OPENING = re.compile(r"---[ \t]*\n")
_CLOSING = re.compile(r"\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)")
_TOP_LEVEL_KEY = re.compile(r"^[^\s#-][^:\n]*:", re.M)


def split_frontmatter(text: str, diagnostics: list[Diagnostic]) -> tuple[dict[str, Any], str, int]:
    """Return (frontmatter, body, line number of the body's first line)."""
    if not text.startswith("---"):
        return {}, text, 1
    opening = _OPENING.match(text)
    closing = _CLOSING.search(text, opening.end() - 1) if opening is not None else None
    if opening is None or closing is None:
        if opening is not None:
            diagnostics.append(
                Diagnostic(
                    "unclosed_frontmatter",
                    "frontmatter starts with '---' but never closes; treated as body",
                    "warning",
                )
            )
        return {}, text, 1
    block = text[opening.end() : closing.start() + 1]
    body = text[closing.end() :]
    body_line = text.count("\n", 0, closing.end()) + 1
    data = _load_yaml(block, diagnostics)
    return data, body, body_line


def _load_yaml(block: str, diagnostics: list[Diagnostic]) -> dict[str, Any]:
    if not block.strip():
        return {}
    try:
        data = _simple(block, plain=True)
        if data is not None and len(block) < MAX_FRONTMATTER_NODES:
            return data  # what ``_plain`` would make of it: a value or an item takes two characters at least
        if data is None:
            at = placeholder_line(block)
            if at is not None:  # (a template's: its load is known to fail there, and costs 10x the rest)
                raise _unhashable_key(at)
            data = yaml.load(block, Loader=_Loader)
    except (yaml.YAMLError, RecursionError) as exc:
        if _nests_too_deep(block):  # refused as if it had loaded, whatever the YAML library's own limit
            diagnostics.append(
                Diagnostic("frontmatter_too_large", f"frontmatter {_TOO_DEEP}; ignored", "error")
            )
            return {}
        recovered = _recover_yaml(block, diagnostics)
        where = getattr(exc, "problem_mark", None)
        line = f" at frontmatter line {where.line + 1}" if where is not None else ""
        diagnostics.append(
            Diagnostic(
                "invalid_frontmatter",
                f"invalid YAML frontmatter{line}: "
                f"{getattr(exc, 'problem', None) or exc}; kept {len(recovered)} field(s) that "
                "parse on their own",
                "warning",
            )
        )
        return recovered
    if data is None:
        return {}
    if not isinstance(data, dict):
        diagnostics.append(
            Diagnostic(
                "frontmatter_not_mapping",
                f"frontmatter is a {type(data).__name__}, not key: value pairs; ignored",
                "warning",
            )
        )
        return {}
    budget = _Budget()
    try:
        plain: dict[str, Any] = _plain(data, budget)
    except _TooBig as exc:
        diagnostics.append(Diagnostic("frontmatter_too_large", f"frontmatter {exc}; ignored", "error"))
        return {}
    _report_as_text(budget.as_text, diagnostics)
    return plain


def _unhashable_key(line: int) -> yaml.YAMLError:
    """What ``yaml.load`` raises for a block whose first placeholder is on ``line`` (``placeholder_line``)."""
    mark = yaml.Mark("<unicode string>", 0, line, 0, None, 0)
    return yaml.constructor.ConstructorError(
        "while constructing a mapping", mark, "found unhashable key", mark
    )


def _recover_yaml(block: str, diagnostics: list[Diagnostic]) -> dict[str, Any]:
    """Parse each top-level ``key:`` section on its own so one bad line loses one field, not all."""
    starts = [m.start() for m in _TOP_LEVEL_KEY.finditer(block)] + [len(block)]
    recovered: dict[str, Any] = {}
    as_text: list[tuple[str, _AsText]] = []
    for start, end in itertools.pairwise(starts):
        section = block[start:end]
        try:
            part = _simple(section, plain=True)  # (the fields of a template's bad block mostly are simple)
            if part is not None and len(section) < MAX_FRONTMATTER_NODES:
                recovered.update(part)  # (what ``_plain`` makes of it, as in ``_load_yaml``)
                continue
            if part is None:
                part = _load_section(section)
            if isinstance(part, dict):
                budget = _Budget()
                recovered.update(_plain(part, budget))
                as_text += budget.as_text
        except (yaml.YAMLError, RecursionError, _TooBig):  # RecursionError: see _nests_too_deep
            continue
    _report_as_text(as_text, diagnostics)
    return recovered


# What YAML made of a bad block's section: the same few recur in every note made from one template
# ("created: {{date}}"), and each costs a YAML load that fails. ``_plain`` copies what it reads from them.
_SECTIONS: dict[str, Any] = {}
_MAX_SECTIONS = 1_000
_SECTION_CHARS = 200  # longer sections are not remembered
_FAILED = object()


def _load_section(section: str) -> Any:
    """``yaml.load(section)``; ``_FAILED`` when it is not YAML."""
    found = _SECTIONS.get(section, _SECTIONS)
    if found is _SECTIONS:
        try:
            found = yaml.load(section, Loader=_Loader)
        except yaml.YAMLError:
            found = _FAILED
        if len(section) <= _SECTION_CHARS:
            if len(_SECTIONS) >= _MAX_SECTIONS:
                _SECTIONS.clear()
            _SECTIONS[section] = found
    return found


def _report_as_text(as_text: list[tuple[str, _AsText]], diagnostics: list[Diagnostic]) -> None:
    """One warning naming each frontmatter value kept as text (see ``_AsText``)."""
    if not as_text:
        return
    shown = [
        f"{field!r}: {text[:24] + '…' if len(text) > 25 else text} is {text.reason}"
        for field, text in as_text[:5]
    ]
    more = f" (and {len(as_text) - 5} more)" if len(as_text) > 5 else ""
    diagnostics.append(
        Diagnostic(
            "frontmatter_value_as_text",
            f"frontmatter {'; '.join(shown)}{more}; kept as the text written",
            "warning",
        )
    )


def _nests_too_deep(block: str) -> bool:
    """Whether ``block`` nests collections deeper than ``MAX_FRONTMATTER_DEPTH``, for YAML that failed to
    load: the answer then must not depend on the YAML library. Frontmatter that loads and nests too deep is
    refused by ``_plain``; but how deep a loader goes before failing differs: PyYAML 6.0.4's libyaml stops
    at 1,000 levels with a "maximum nesting depth" error (6.0.3's loads them), and the pure-Python composer
    runs out of stack (RecursionError). So the depth is counted here from the pure-Python parser's events,
    which nest without recursion and without a limit, stopping at the first value too deep (libyaml's own
    parser cannot be used: it scans up to 1,024 characters ahead and fails there first). Only failed loads
    pay for this, and the scan stops at the first too-deep value or the first syntax error."""
    if sum(block.count(c) for c in "[{-:?") <= MAX_FRONTMATTER_DEPTH:
        # Every collection opens at an indicator of its own ('[', '{', a list's '-', a mapping's first
        # ':' or '?'): with no more of them than the limit, no value can sit deeper (most bad blocks,
        # such as a template's ``created: {{date}}``, end here instead of in YAML's Python parser).
        return False
    depth = 0  # collections open around the next value; the top-level mapping is at depth 0, as in _plain
    try:
        for event in yaml.parse(block, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.NodeEvent):  # a scalar, an alias or a collection's start
                if depth > MAX_FRONTMATTER_DEPTH:
                    return True
                if isinstance(event, yaml.CollectionStartEvent):
                    depth += 1
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:  # invalid before it gets too deep
        return False
    return False


_TOO_DEEP = f"nests deeper than {MAX_FRONTMATTER_DEPTH} levels (recursive YAML alias?)"


class _TooBig(Exception):
    pass


class _Budget:
    def __init__(self) -> None:
        self.left = MAX_FRONTMATTER_NODES
        self.as_text: list[tuple[str, _AsText]] = []  # (top-level field, value) kept as text

    def spend(self, depth: int) -> None:
        self.left -= 1
        if self.left < 0:
            raise _TooBig(f"expands to more than {MAX_FRONTMATTER_NODES:,} values (YAML alias bomb?)")
        if depth > MAX_FRONTMATTER_DEPTH:
            raise _TooBig(_TOO_DEEP)


def _plain(value: Any, budget: _Budget, depth: int = 0, field: str = "") -> Any:
    """Convert YAML values to JSON-safe ones, counting nodes so shared aliases cannot explode.
    ``field`` is the top-level key the value sits under (for diagnostics)."""
    budget.spend(depth)
    if isinstance(value, dict):
        return {str(k): _plain(v, budget, depth + 1, field or str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v, budget, depth + 1, field) for v in value]
    if type(value) is _AsText:
        budget.as_text.append((field, value))
        return str(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)  # the loader already keeps these as text
    return str(value)
