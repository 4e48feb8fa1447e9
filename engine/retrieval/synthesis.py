"""Bottom-up synthesis helpers (E8): find where children disagree, and keep both sides with attribution.

A *decision slot* is one thing a child states a value for. Two kinds are read from each child's answer
(citations and Markdown emphasis removed first), one statement (a line, or a sentence of a line) at a
time:

- ``key: value`` lines: a key of at most four words (not a generic label such as "Note" or "Example")
  and a value of at most eight words. Slot: the key's stemmed words.
- numbers with a unit: ``20–25 %``, ``94 °C``, ``1:16``, ``3.7 Gbps``, ``7 days``. Slot: the last
  content word before the number in the same clause (its stem) plus the unit. Bare numbers without a
  unit, and years, are ignored.

Sides are counted per *source*: the note a statement cites (its first citation, heading dropped). A
source's first value for a slot is its value. Copies of one source are one source: a sync-conflict copy
("Note (conflict 2024-01-02)", "Note.sync-conflict-...") counts as its original, and statements with the
same words from different notes are one statement copied. A side is *about what the task asks* when the
task names its note (every content word of the note's name, or of the cited heading, is in the task; of
several, those named by the most words: "Simple Image Inserter" names its plugin's note, not another's
heading "Image Inserter"): when one side of a slot is, the sides from notes the task does not name (as
fully) are about something else (a plugin page's "Mobile compatible: Yes" on another plugin) and are left
out; a ``key: value`` slot no side of which is named is no conflict at all (the "Website:" lines of two
developers' notes, found for "what website does that developer list?", state each note's own property),
and a value that is its note's own name ("Plugin ID: latex-ocr" in ``latex-ocr.md``) names the note. When
two or more sources give a slot different values, that is a ``Conflict``: every side is kept with its
subtask, node id, the statement and its citations. This is deliberately simple and errs towards missing a
conflict rather than inventing one: the same quantity worded differently ("rest" vs "resting time") is not
matched.

``drop_repeated_bullets`` keeps a report from saying the same thing twice: a list item whose words repeat
an earlier one (near-identical, citations aside) is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any

from ..text import STOP_WORDS, section_heading, stem
from .citations import make_citation

__all__ = [
    "MAX_CONFLICTS",
    "Conflict",
    "ConflictSide",
    "detect_conflicts",
    "drop_repeated_bullets",
    "render_conflicts",
    "section_heading",
    "source_of",
]

MAX_CONFLICTS = 10
GENERIC_KEYS = frozenset(
    "note notes example examples tip tips warning see source sources citation citations summary answer "
    "question task subtask step result results conclusion caveat important update edit todo why how what "
    "pros cons recipe setup".split()
)
UNITS = frozenset(
    "% °c °f ºc c f g kg mg ml l cl oz lb s sec secs second seconds min mins minute minutes h hr hrs hour "
    "hours day days week weeks month months year years ppm bar psi mm cm m km µm micron microns gbps mbps "
    "kbps ghz mhz khz hz gb mb kb tb v w kw mah fps bits bit bytes byte px dpi rpm cups cup times x".split()
)
_CITE = re.compile(r"\[\[[^\[\]\n]+?\]\]")
_KEY_VALUE = re.compile(r"^(?:\*\*|__)?([A-Za-z][\w /()'-]{0,40}?)(?:\*\*|__)?\s*:\s+(\S.{0,120})$")
_NUM = r"\d+(?:[.,]\d+)?"
_QUANTITY = re.compile(
    rf"(?<![\w.:/-])(?P<value>\d+:\d+(?::\d+)?|{_NUM}(?:\s*(?:–|—|-|to)\s*{_NUM})?)"
    r"(?P<unit>\s*(?:°\s*[cf]\b|º\s*c\b|%|[a-zµ]+\b))?",
    re.I,
)
_CLAUSE_BREAK = re.compile(r"[,;:()]|\bbut\b|\band\b|\bwhile\b|\bwhereas\b", re.I)
_WORD = re.compile(r"[^\W\d_]+", re.U)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\[A-Z0-9])|(?<=\]\])\s+(?=[A-Z0-9])")
_COPY = re.compile(r"(?: \([^)]*\bconflict(?:ed)?\b[^)]*\)|\.sync-conflict-[^/]*)$", re.I)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
REPEAT_SHARE = 0.85  # word-set overlap (Jaccard) at which two list items say the same thing


@dataclass
class ConflictSide:
    node_id: str
    task: str
    value: str
    statement: str
    citations: list[str] = field(default_factory=list)
    source: str = ""  # the note it rests on (a copy counts as its original)


@dataclass
class Conflict:
    slot: str  # what the children disagree on, readable ("rest (days)", "brew ratio")
    kind: str  # "key_value" | "number"
    sides: list[ConflictSide]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _field(child: Any, name: str) -> Any:
    return child.get(name) if isinstance(child, dict) else getattr(child, name, None)


def _norm_value(value: str) -> str:
    value = value.replace("—", "-").replace("–", "-").replace(" to ", "-").replace(",", ".")
    value = re.sub(r"\s*-\s*", "-", value)
    value = re.sub(r"\d+\.\d+", lambda m: format(float(m.group(0)), "g"), value)  # 20.0 == 20
    return " ".join(value.lower().strip(" .;:!*_`\"'").split())


def _statements(answer: str) -> list[tuple[str, list[str]]]:
    """(statement without citations or emphasis, its citations) for each line or sentence. A citation
    belongs to the sentence it follows; a sentence without one takes the next citation on its line."""
    out: list[tuple[str, list[str]]] = []
    for raw in answer.splitlines():
        line = re.sub(r"^\s*(?:[-*+>]|\d+[.)])\s+", "", raw).strip()
        if not line or line.startswith("#"):
            continue
        pieces: list[list[Any]] = []  # [text, citations]
        for piece in _SENTENCE.split(line):
            lead = re.match(r"^((?:\[\[[^\[\]\n]+?\]\]\s*)+)", piece)
            if lead and pieces:
                pieces[-1][1] += _CITE.findall(lead.group(1))
                piece = piece[lead.end() :]
            if piece.strip():
                pieces.append([piece, _CITE.findall(piece)])
        for k, (piece, cites) in enumerate(pieces):
            if not cites:
                cites = next((later[1] for later in pieces[k + 1 :] if later[1]), [])
            text = " ".join(_CITE.sub(" ", piece).split()).replace("**", "").replace("__", "")
            if text:
                out.append((text, list(dict.fromkeys(cites))))
    return out


def _key_value(statement: str) -> tuple[str, str, str] | None:
    m = _KEY_VALUE.match(statement)
    if not m:
        return None
    key, value = m.group(1).strip(), m.group(2).strip()
    words = _WORD.findall(key.lower())
    if not words or len(words) > 4 or len(value.split()) > 8 or " ".join(words) in GENERIC_KEYS:
        return None
    slot = " ".join(stem(w) for w in words if w not in STOP_WORDS) or " ".join(words)
    return f"kv:{slot}", key.lower(), _norm_value(value)


def _numbers(statement: str) -> list[tuple[str, str, str]]:
    """(slot, readable slot, value) for each number-with-unit in the statement."""
    out = []
    last_end = 0
    for m in _QUANTITY.finditer(statement):
        value, unit = m.group("value"), (m.group("unit") or "").strip().lower().replace(" ", "")
        start, end = m.start(), m.end()
        before = statement[last_end:start]
        last_end = end
        if ":" in value:
            unit = "ratio"
        elif unit not in UNITS:
            continue
        if re.fullmatch(r"(?:19|20)\d\d", value) and not unit:
            continue
        clause = _CLAUSE_BREAK.split(before)[-1]
        subject = [w for w in _WORD.findall(clause.lower()) if w not in STOP_WORDS and len(w) > 1]
        if not subject:
            continue
        unit = {"°c": "°C", "ºc": "°C", "°f": "°F"}.get(unit, unit)
        out.append((f"num:{stem(subject[-1])}:{unit}", f"{subject[-1]} ({unit})", _norm_value(value)))
    return out


def _child_citations(child: Any) -> list[str]:
    out = []
    for c in _field(child, "citations") or ():
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, dict) and isinstance(c.get("path"), str):
            out.append(
                make_citation(str(c.get("vault") or ""), c["path"], c.get("heading"), block=c.get("block"))
            )
    return out


def source_of(citation: str) -> str:
    """The note a citation rests on: its path without heading or block, a sync-conflict copy's suffix
    removed, case folded (``[[A/Note (conflict 2024-01-02)#H]]`` -> ``a/note``)."""
    path, _ = _target(citation)
    return _COPY.sub("", path).strip().casefold()


def _target(citation: str) -> tuple[str, str]:
    """(note path without ``.md``, heading or block) of a wikilink citation."""
    inner = citation.strip()
    inner = inner[2:-2] if inner.startswith("[[") and inner.endswith("]]") else inner
    path, _, heading = inner.split("|", 1)[0].partition("#")
    path = path.strip()
    return (path[:-3] if path.lower().endswith(".md") else path), heading.strip()


def detect_conflicts(children: list[Any]) -> list[Conflict]:
    """Decision slots that different sources fill with different values (see the module docstring).
    ``children``: dicts or objects with ``node_id`` (or ``id``), ``task``, ``answer``, ``citations``."""
    slots: dict[str, dict[str, Any]] = {}
    for child in children:
        answer = _field(child, "answer")
        if not isinstance(answer, str) or not answer.strip():
            continue
        node_id = str(_field(child, "node_id") or _field(child, "id") or "?")
        task = " ".join(str(_field(child, "task") or "").split())
        asked = {stem(w) for w in _WORD.findall(task.lower())}
        fallback = _child_citations(child)
        mine: list[list[Any]] = []  # this child's (named, side) pairs
        for statement, cites in _statements(answer):
            facts = []
            kv = _key_value(statement)
            if kv:
                facts.append((*kv, "key_value"))
            facts += [(*n, "number") for n in _numbers(statement)]
            cited = cites or fallback[:3]
            source = source_of(cited[0]) if cited else f"node:{node_id}"
            named = _names(asked, cited[0]) if cited else 0
            own_name = _same_words(source.rsplit("/", 1)[-1])
            for slot, label, value, kind in facts:
                if kind == "key_value" and _same_words(value) == own_name:
                    continue  # the note's own name ("Plugin ID: latex-ocr" in latex-ocr.md): what it is
                if value:
                    entry = slots.setdefault(slot, {"label": label, "kind": kind, "sides": []})
                    side = ConflictSide(node_id, task, value, statement, cited, source)
                    entry["sides"].append([named, side])
                    mine.append(entry["sides"][-1])
        # of the notes a child's task names, those it names most fully: "Simple Image Inserter" names
        # simple-image-inserter.md, not the heading "Image Inserter" of another plugin's note
        most = max((n for n, _ in mine), default=0)
        for pair in mine:
            pair[0] = bool(most) and pair[0] == most
    conflicts = []
    for slot in sorted(slots):
        entry = slots[slot]
        candidates = entry["sides"]
        if any(named for named, _ in candidates):
            candidates = [c for c in candidates if c[0]]
        elif entry["kind"] == "key_value":
            continue  # each note's own property ("Website: ..." of two developers): not one thing
        sides: list[ConflictSide] = []
        for _, side in candidates:
            said = _same_words(side.statement)
            if any(s.source == side.source or _same_words(s.statement) == said for s in sides):
                continue  # one source (or a copy of it) is one side, whatever it says again
            sides.append(side)
        if len({s.value for s in sides}) < 2:
            continue  # agreement, or a single source
        conflicts.append(Conflict(entry["label"], entry["kind"], sides))
    return conflicts[:MAX_CONFLICTS]


def _names(asked: set[str], citation: str) -> int:
    """How many words of the name by which a task whose word stems are ``asked`` names the note (or the
    heading) ``citation`` cites: 0 when the task names it by neither."""
    path, heading = _target(citation)
    named = 0
    for name in (path.rsplit("/", 1)[-1], heading):
        words = [stem(w) for w in _WORD.findall(name.lower()) if w not in STOP_WORDS]
        if words and all(w in asked for w in words):
            named = max(named, len(words))
    return named


def _same_words(statement: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", statement.lower()))


def _words(line: str) -> set[str]:
    return set(re.findall(r"[^\W_]+", _CITE.sub(" ", line).lower()))


def drop_repeated_bullets(text: str, first: Collection[str] = ()) -> tuple[str, int]:
    """(``text`` without list items that repeat another list item, how many were dropped). An item is kept
    where it first appears, except that the sections headed by one of ``first`` (the goal's own clauses)
    keep their items before any other section does: "Who developed X?" keeps its byline, and the framing
    section above it loses the copy. A section left with no item of its own says so."""
    lines = text.split("\n")
    section = [""] * len(lines)
    heading = ""
    for i, line in enumerate(lines):
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        section[i] = heading
    wanted = set(first)
    order = sorted(range(len(lines)), key=lambda i: (section[i] not in wanted, i))
    seen: list[set[str]] = []
    dropped_at: set[int] = set()
    for i in order:
        line = lines[i]
        if not (_BULLET.match(line) and "[[" in line) or line.startswith("#"):
            continue
        words = _words(_BULLET.sub("", line))
        if words and any(len(words & w) / len(words | w) >= REPEAT_SHARE for w in seen):
            dropped_at.add(i)
        else:
            seen.append(words)
    out: list[str] = []
    section_start: int | None = None
    kept_here = removed_here = 0

    def close_section() -> None:
        if section_start is not None and removed_here and not kept_here:
            blank = 0
            while len(out) > section_start + 1 and not out[-1].strip():
                out.pop()
                blank += 1
            out.extend(["", "_Its passages are quoted in the other sections._"] + [""] * min(blank, 1))

    for i, line in enumerate(lines):
        if line.startswith("#"):
            close_section()
            section_start, kept_here, removed_here = len(out), 0, 0
        elif i in dropped_at:
            removed_here += 1
            continue
        elif _BULLET.match(line) and "[[" in line:
            kept_here += 1
        out.append(line)
    close_section()
    return "\n".join(out), len(dropped_at)


def render_conflicts(conflicts: list[Conflict]) -> str:
    """A Markdown section keeping every side with its subtask, node id, statement and citations."""
    if not conflicts:
        return ""
    lines = [
        "### Conflicting findings",
        "",
        "The cited sources state different values for the same thing. Every side is kept, with its source "
        "and the subtask that found it; check the cited notes before relying on either.",
        "",
    ]
    for c in conflicts:
        lines.append(f"**{c.slot}**")
        lines.append("")
        for s in c.sides:
            cites = " ".join(s.citations) if s.citations else "(no citation)"
            lines.append(f"- {s.value} — from “{s.task}” (`{s.node_id}`): “{s.statement}” {cites}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
