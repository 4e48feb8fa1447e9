"""The offline provider's extractive answer: the context passages that best answer the task (ranked by
``_offline_text``), de-duplicated, at most ``MAX_PASSAGES`` (plus a few for question words or kinds of
answer they lack), each quoted as written and followed by its item's citation exactly as given."""

from __future__ import annotations

import re
from typing import Any

from ..strategies import stage_subject
from ._flat_tables import rebuild_flat_tables
from ._offline_compare import SideItem, compared_sides, side_passages
from ._offline_subject import subject_items
from ._offline_text import (
    Passage,
    as_text,
    asked_kinds,
    asked_nouns,
    clip,
    norm_key,
    properties,
    rank_passages,
    table_header,
    terms,
    wanted_answers,
    with_antecedent,
)
from ._offline_units import quotable_units
from ._procedure import listed_items, procedure

__all__ = ["MAX_PASSAGES", "MIN_COVERAGE", "NOTHING_FOUND", "answer"]

MAX_PASSAGES = 6
MAX_GAP_PASSAGES = 2  # more passages, each for a question word the first ones lack
MAX_PER_ITEM = 3
MIN_REPEAT_WORDS = 4  # a shorter passage held whole by a longer one repeats it from this many words
MIN_FIRST_WORDS = 4  # the first passage of a side's own note: a sentence, not a name
_FIELD = re.compile(r"[^:\n]{1,40}:\s")  # "Developed by: pjeby", "description: ...": a field, not a sentence
PROCEDURE_CHARS = 1000  # a procedure quoted whole (``_procedure``) is clipped at this length
MIN_COVERAGE = 0.15  # a quoted passage (with its heading) holds at least this share of the task's terms
NOTHING_FOUND = "The vault context holds nothing that answers this subtask"


def _context_items(inputs: dict[str, Any]) -> list[dict[str, str]]:
    items = []
    for c in inputs.get("context") or ():
        if not isinstance(c, dict) or not isinstance(c.get("text"), str):
            continue
        citation = c.get("citation")
        if not isinstance(citation, str) or not citation.strip():
            continue  # a passage that cannot be cited is not quoted
        label = " ".join(str(c.get(k) or "") for k in ("heading", "path"))
        text = rebuild_flat_tables(c["text"])
        path = str(c.get("path") or "")
        heading = str(c.get("heading") or "")
        items.append(
            {"text": text, "citation": citation.strip(), "label": label, "path": path, "heading": heading}
        )
    return items


def answer(inputs: dict[str, Any]) -> str:
    """Extractive answer: ranked passages from the context, each with its citation."""
    goal = as_text(inputs.get("goal"))
    task = stage_subject(
        as_text(inputs.get("task")), goal
    )  # not "Obsidian frame" for "Frame the question: ..."
    items = _context_items(inputs)
    if not items:
        return f"{NOTHING_FOUND}: no vault passages were retrieved for it."
    # The sections one link from what the step this one builds on found (``referents``): what its "that
    # developer" points at.
    cited = {c for c in inputs.get("referents") or () if isinstance(c, str)}
    referents = frozenset(k for k, i in enumerate(items) if i["citation"] in cited)
    if not referents:  # "..., and how do they differ?" is about what the clause before it asked for
        task = with_antecedent(task, goal)
    pairs = [(i["label"], i["text"]) for i in items]
    # A question that names its subject ("the GitHub user Artel250") is answered from the named note and
    # the notes linked with it, before notes that only share its other words ("AI assistant").
    subject = subject_items(f"{task} {goal}", [(i["path"], i["text"]) for i in items])
    ranked = rank_passages(
        task or goal, pairs, extra=goal if task else "", referents=referents, subject=subject
    )
    chosen: list[str | int] = []  # a bullet, or the item whose table rows go here
    rows: dict[int, list[str]] = {}
    keys: list[str] = []
    per_item: dict[int, int] = {}
    count = 0
    # The best passages first; then, for a question word none of them holds, the best passage that
    # holds it: the second step of a two-step question ("... what theme did that developer make?")
    # is rarely in the passages that rank first for the whole question.
    uncovered = set(terms(task or goal))
    # And a passage of each kind of answer the question wants (a cause for "why", a number for "how
    # long") when none of those is one: "How long should I rest beans, and why?" asks for both.
    unanswered = wanted_answers(task or goal)

    kinds, nouns = asked_kinds(task or goal), asked_nouns(task or goal)
    split: dict[int, list[tuple[str, str, bool, bool, bool]]] = {}

    def units_of(k: int) -> list[tuple[str, str, bool, bool, bool]]:  # an item's units, split once
        if k not in split:
            split[k] = quotable_units(items[k]["text"])
        return split[k]

    def take(p: Passage) -> bool:
        nonlocal count
        # a step of a numbered list, for a "how do I" question: the whole procedure, in order
        steps = procedure(items[p.item]["text"], p.text) if "steps" in p.gives else []
        # an item of a list under a heading that names what is asked ("### Plugins" for "which plugins"):
        # the whole list, in order
        listed = (
            listed_items(items[p.item]["text"], p.text)
            if _is_kind(p, units_of(p.item), kinds, nouns) and not steps
            else []
        )
        quoted = " ".join(steps) if steps else "; ".join(listed) if listed else p.text
        key = norm_key(quoted)
        if not key or any(_repeats(key, k) for k in keys) or per_item.get(p.item, 0) >= MAX_PER_ITEM:
            return False
        table = p.text.startswith("|") and table_header(items[p.item]["text"], p.text) is not None
        if p.text.startswith("|") and not table:
            return False  # a table's header line (or a stray pipe line) says nothing on its own
        keys.append(key)
        per_item[p.item] = per_item.get(p.item, 0) + max(1, len(listed))  # a list counts its items
        count += 1
        uncovered.difference_update(p.matched)
        unanswered.difference_update(p.gives)
        if table:
            if p.item not in rows:  # table rows stay a table (with the header), not bullets
                chosen.append(p.item)
            rows.setdefault(p.item, []).append(p.text)
        else:
            whole = steps or listed
            text = clip(quoted, PROCEDURE_CHARS) if whole else _owner(items[p.item], p.text) + clip(p.text)
            chosen.append(f"- {text} {items[p.item]['citation']}")
        return True

    # A comparison: each side answered first, from its own note ("what is each for?": the note's opening)
    sides = compared_sides(task or goal)
    if sides:
        for p in side_passages(sides, ranked, [_side_item(i, units_of(k)) for k, i in enumerate(items)]):
            take(p)
    for p in ranked:
        filling_gaps = count >= MAX_PASSAGES
        if not (uncovered & set(p.matched) if filling_gaps else p.coverage >= MIN_COVERAGE):
            continue
        full = count >= MAX_PASSAGES + MAX_GAP_PASSAGES
        if take(p) and (full or (count >= MAX_PASSAGES and not uncovered)):
            break
    for kind in sorted(unanswered):
        for p in ranked if kind in unanswered else []:
            # Under a heading that names the kind of thing asked for ("### Themes" for "what theme"), an
            # item is on topic however few of the question's other words it shares.
            relevant = p.coverage >= MIN_COVERAGE or kind == "listed"
            if kind in p.gives and relevant and take(p):
                break
    if not chosen:
        return f"{NOTHING_FOUND}: none of the {len(items)} retrieved passage(s) mention its key terms."
    return _join([c if isinstance(c, str) else _table(items[c], rows[c]) for c in chosen])


def _is_kind(
    p: Passage, units: list[tuple[str, str, bool, bool, bool]], kinds: frozenset[str], nouns: frozenset[str]
) -> bool:
    """Whether ``p`` is an item of a list headed by the very kind of thing the question asks for ("###
    Plugins" for "which plugins"; not "Theme judges" for "which themes", whose items are judges, nor
    "Plates" for "which plate boundaries": the heading holds the kind's noun and no other word)."""
    if "listed" not in p.gives:
        return False
    heading = units[p.index][1] if p.index < len(units) else ""
    named = set(terms(heading))
    return bool(named) and named <= kinds and bool(named & nouns)


def _side_item(item: dict[str, str], units: list[tuple[str, str, bool, bool, bool]]) -> SideItem:
    """What a comparison's sides are matched against (``side_passages``): a section is named by its
    heading, a note's opening by the note's title; its first passage is its first sentence of its own: not
    a property nor a field of a template ("Plugin ID: `dataview`", "Links: ..."), not a title of a few
    words."""
    name = item["heading"] or item["path"].rsplit("/", 1)[-1].removesuffix(".md")
    first = next(
        (unit for unit, *_ in units if not _FIELD.match(unit) and len(unit.split()) >= MIN_FIRST_WORDS),
        "",
    )
    heads = [h for _, h, *_ in units[:3] if h] if not item["heading"] else []
    return SideItem(item["label"], name.lower(), first, heads[0].lower() if heads else "")


def _repeats(key: str, other: str) -> bool:
    """Whether a passage (its ``norm_key``) says again what one already quoted says: the same words, or
    words one holds whole, unless those are a short name inside a longer line ("Chat with Bard", a
    person's plugin, is not said again by "Plugin ID: chat-with-bard")."""
    if key == other:
        return True
    shorter, longer = sorted((key, other), key=len)
    return shorter.count(" ") + 1 >= MIN_REPEAT_WORDS and shorter in longer


def _owner(item: dict[str, str], text: str) -> str:
    """For one of the property lines a note opens with, the note's name and a dash: "coordinates: 34.96,
    135.77" says nothing of whose coordinates they are (and two notes' properties are two things, not
    two answers to one question)."""
    if text not in properties(item["text"]):
        return ""
    name = item["citation"].strip("[]").split("|", 1)[0].split("#", 1)[0].rsplit("/", 1)[-1]
    return f"{name} — " if name else ""


def _table(item: dict[str, str], rows: list[str]) -> str:
    """The chosen rows of one table under its header, each row citing the note in a last column (so
    every line of the answer still carries its citation)."""
    header, rule = table_header(item["text"], rows[0]) or ("", "")
    cite = item["citation"]
    lines = [f"{header.rstrip('|').rstrip()} | source |", f"{rule.rstrip('|').rstrip()} | --- |"]
    lines += [f"{row.rstrip('|').rstrip()} | {cite} |" for row in rows]
    return "\n".join(lines)


def _join(parts: list[str]) -> str:
    """Bullets one per line; a table set apart by blank lines (Markdown needs them around it)."""
    out = ""
    for part in parts:
        table = part.startswith("|")
        if out:
            out += "\n\n" if table or out.endswith("|") else "\n"
        out += part
    return out
