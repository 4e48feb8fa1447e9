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
_TOP_LEVEL_KEY = re.compile(r"^[^\s#-][^:\n]*:", re.M)


def split_frontmatter(text: str, diagnostics: list[Diagnostic]) -> tuple[dict[str, Any], str, int]:
    """Return (frontmatter, body, line number of the body's first line)."""
    if not text.startswith("---"):
        return {}, text, 1
    match = _FRONTMATTER.match(text)
    if match is None:
        if re.match(r"---[ \t]*\n", text):
            diagnostics.append(
                Diagnostic(
                    "unclosed_frontmatter",
                    "frontmatter starts with '---' but never closes; treated as body",
                    "warning",
                )
            )
        return {}, text, 1
    block = match.group(1)
    body = text[match.end() :]
    body_line = text.count("\n", 0, match.end()) + 1
    data = _load_yaml(block, diagnostics)
    return data, body, body_line


# The frontmatter most notes have: ``key: value`` lines and ``key:`` followed by ``- value`` items, where
# each value is a one-line plain scalar that YAML reads as text, a ``true``/``false``, a decimal integer or
# a date (``2024-01-02``), a double-quoted string without escapes (``"[[Link]]"``), a flow list of plain
# words (``[a, b]``), ``[]``, or nothing (``- `` alone, an empty list item as templates leave under
# ``tags:``, is None). Read by hand, it gives what YAML gives (tests/test_frontmatter.py checks that on
# every real vault), at a fraction of the cost: YAML was about half of a note's parse time.
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
_RESOLVERS: dict[str | None, list[tuple[str, re.Pattern[str]]]] = _Loader.yaml_implicit_resolvers
_TAG = "tag:yaml.org,2002:"


def _simple(block: str) -> dict[str, Any] | None:
    """``block`` read by hand when it is the simple kind above; None when YAML must read it."""
    data: dict[str, Any] = {}
    key: str | None = None  # the key whose list is being read
    indent: str | None = None
    for line in block.split("\n"):
        if not line:
            continue
        if line.lstrip(" ").startswith("- "):
            if key is None:
                return None
            pad, _, item = line.partition("- ")
            value = None if not item.strip(" ") else _scalar(item)  # "- " alone: an empty item
            if (indent is not None and pad != indent) or pad.strip() or value is _NOT_SIMPLE:
                return None
            indent = pad
            data[key].append(value)
            continue
        name, sep, value = line.partition(":")
        if not sep or not _SIMPLE_KEY.match(name) or name.lower() in _YAML_WORDS:
            return None
        if key is not None and not data[key]:
            data[key] = None  # ``key:`` with nothing under it
        key, indent = None, None
        if not value.strip(" "):  # ``key:`` (trailing spaces too): a list follows, or nothing
            key = name
            data[name] = []
        elif value == " []":
            data[name] = []
        elif value.startswith(" ") and (scalar := _scalar(value[1:])) is not _NOT_SIMPLE:
            data[name] = scalar
        else:
            return None
    if key is not None and not data[key]:
        data[key] = None
    return data


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


def _load_yaml(block: str, diagnostics: list[Diagnostic]) -> dict[str, Any]:
    if not block.strip():
        return {}
    try:
        data = _simple(block)
        if data is None:
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


def _recover_yaml(block: str, diagnostics: list[Diagnostic]) -> dict[str, Any]:
    """Parse each top-level ``key:`` section on its own so one bad line loses one field, not all."""
    starts = [m.start() for m in _TOP_LEVEL_KEY.finditer(block)] + [len(block)]
    recovered: dict[str, Any] = {}
    as_text: list[tuple[str, _AsText]] = []
    for start, end in itertools.pairwise(starts):
        try:
            part = _simple(block[start:end])  # (the fields of a template's bad block mostly are simple)
            if part is None:
                part = yaml.load(block[start:end], Loader=_Loader)
            if isinstance(part, dict):
                budget = _Budget()
                recovered.update(_plain(part, budget))
                as_text += budget.as_text
        except (yaml.YAMLError, RecursionError, _TooBig):  # RecursionError: see _nests_too_deep
            continue
    _report_as_text(as_text, diagnostics)
    return recovered


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
