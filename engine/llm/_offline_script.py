"""The offline provider's retrieval script: a fixed template, filled with the task's queries.

The script runs in the Code Mode sandbox, where ``obsidian`` is the vault API. It searches for the
task, then for its key words, then for each hint; hands back each hit's passage (the text that
matched; for a search that gives none, the section under the hit's heading) with a full-path wikilink,
and the opening of a note whose title names the task ("What is Sherlocking?" and a note "Sherlocking");
and sets ``__result__`` to ``{context, citations, queries, signals, confidence, why}``. Confidence is
the share of the task's key words that occur in the context (the engine scores retrieval itself anyway).
"""

from __future__ import annotations

from typing import Any

from ..text import parse_query
from ._offline_compare import COMPARING, Side, compared_sides
from ._offline_subject import proper_names
from ._offline_text import DEFINED

__all__ = ["retrieval_script"]

LIMIT = 6
CANDIDATES = 12  # hits of each query considered
RANK_SHARE = 0.3  # of a hit's fit, for being ranked first by a search (half that second, ...)
SECTION_CHARS = 1200
MAX_QUERIES = 5

_TEMPLATE = """\
# Retrieval script written by Shad's offline provider from a fixed template (no language model).
# Task: {task_comment}
QUERIES = {queries}
WORDS = {words}
SUBJECT = {subject}
NAMES = {names}
TASK = {task_lower}
LIMIT = {limit}
CANDIDATES = {candidates}
RANK_SHARE = {rank_share}
SECTION_CHARS = {section_chars}

import math
import re


multi = len(obsidian.vaults()) > 1
# Every query's top CANDIDATES hits are pooled; the LIMIT kept are those whose passage holds most of the
# task's words (rarer words weigh more), with a share for how high a search ranked them: a paraphrased
# question's answer often ranks below hits that share one striking word with it.
pool = {{}}
used = []
for query in QUERIES:
    used.append(query)
    for rank, hit in enumerate(obsidian.search(query, limit=CANDIDATES)):
        key = (hit["vault"], hit["path"], hit.get("heading"))
        best = pool[key][1] if key in pool else rank
        pool[key] = [pool[key][0] if key in pool else hit, min(best, rank)]


STARTS = {{w: re.compile(r"(?<![^\\W_])" + re.escape(w)) for w in WORDS}}  # a word, or the start of one


def words_in(hit):
    text = " ".join([hit.get("passage") or "", hit.get("heading") or "", hit["path"]]).lower()
    return {{w for w in WORDS if STARTS[w].search(text)}}


held = {{key: words_in(entry[0]) for key, entry in pool.items()}}
weight = {{w: math.log(1 + len(pool) / (1 + sum(1 for h in held.values() if w in h))) for w in WORDS}}
total = sum(weight.values()) or 1.0


def fit(key):
    return sum(weight[w] for w in held[key]) / total + RANK_SHARE / (1 + pool[key][1])


chosen = sorted(pool, key=lambda key: -fit(key))[:LIMIT]  # stable: ties keep the order found
hits = [pool[key][0] for key in chosen]


# A note whose title names the task ("what is X?" and a note X; a longer title whose every word the task
# holds) is about it: its opening goes first, whichever of its sections the searches matched. Else a note
# titled by a proper name the task spells ("Janis Ringli": janisringli.md); of several, the one the fewest
# hits mention ("Artel250", not "GitHub").
def title_of(path):
    return path.rsplit("/", 1)[-1][:-3].lower()


def names_task(path):
    title = title_of(path)
    if title == SUBJECT:
        return True
    words = [w for w in re.findall(r"[^\\W_]+", title) if len(w) > 2]
    found = [w for w in words if re.search(r"(?<![^\\W_])" + re.escape(w[:max(4, len(w) - 3)]), TASK)]
    return len(words) >= 2 and len(found) >= max(2, 0.8 * len(words))


def spelled(key):
    return "".join(re.findall(r"[^\\W_]+", title_of(key[1])))


texts = [re.sub(r"[\\W_]+", "", (e[0].get("passage") or "").lower()) for e in pool.values()] if NAMES else []
named = [key for key in pool if key[1].endswith(".md") and names_task(key[1])][:1] or sorted(
    (key for key in pool if key[1].endswith(".md") and spelled(key) in NAMES),
    key=lambda key: sum(spelled(key) in text for text in texts),
)[:1]
if named and not any(k[1] == named[0][1] and (k[2] or "").lower() in ("", title_of(k[1])) for k in chosen):
    hits.insert(0, {{"vault": named[0][0], "path": named[0][1], "heading": None, "passage": ""}})
# ... then its section headed by most of the task's other words, of two the one with the later word (a
# phrase's noun: "## Sync a remote vault on another device" of "Set up Obsidian Sync" for "... on a new
# device", not "### Create a new remote vault")
rest = [w for w in WORDS if w not in title_of(named[0][1])] if named else []
notes = {{}}
try:
    if rest:
        notes[named[0][0], named[0][1]] = obsidian.read_note(named[0][1], vault=named[0][0])
    heads = notes[named[0][0], named[0][1]].get("headings") or [] if rest else []
except Exception:
    heads = []
held_by = {{  # (of the sections the opening, its first SECTION_CHARS, does not hold already)
    h["text"]: [i for i, w in enumerate(rest) if STARTS[w].search(h["text"].lower())]
    for h in heads
    if h.get("offset", 0) >= SECTION_CHARS
}}
held_by = {{text: (len(at), at[-1]) for text, at in held_by.items() if at}}
best = max(held_by, key=held_by.get, default=None)
if best and all((h["path"], h.get("heading")) != (named[0][1], best) for h in hits):
    hits.insert(1, {{"vault": named[0][0], "path": named[0][1], "heading": best, "passage": ""}})


{sides_block}

def section(note, heading):
    body = note["body"]
    start = 0
    end = len(body)
    if heading:
        heads = note.get("headings") or []
        for i, h in enumerate(heads):
            if h["text"] == heading:
                start = h["offset"]
                for later in heads[i + 1:]:
                    if later["level"] <= h["level"]:
                        end = later["offset"]
                        break
                break
    return body[start:end].strip()[:SECTION_CHARS]


context = []
citations = []
for hit in hits[:LIMIT]:
    key = (hit["vault"], hit["path"])
    text = hit.get("passage") or ""
    if not text and key not in notes:
        try:
            notes[key] = obsidian.read_note(hit["path"], vault=hit["vault"])
        except Exception:
            continue
    heading = hit.get("heading")
    target = hit["path"][:-3] if hit["path"].endswith(".md") else hit["path"]
    if heading:
        target = target + "#" + heading
    prefix = hit["vault"] + ":" if multi else ""
    context.append({{
        "vault": hit["vault"],
        "path": hit["path"],
        "heading": heading,
        "text": text or section(notes[key], heading),
        "citation": "[[" + prefix + target + "]]",
    }})
    citations.append({{"vault": hit["vault"], "path": hit["path"], "heading": heading}})

text = " ".join([c["text"].lower() for c in context])
found = [w for w in WORDS if w in text]
confidence = round(len(found) / len(WORDS), 3) if WORDS else 0.0
__result__ = {{
    "context": context,
    "citations": citations,
    "queries": used,
    "signals": {{"hits": len(hits), "notes": len(notes), "words_found": found, "words": WORDS}},
    "confidence": confidence,
    "why": str(len(context)) + " section(s) from " + str(len(notes)) + " note(s) for " + str(len(used))
    + " quer(ies); " + str(len(found)) + "/" + str(len(WORDS)) + " key words found",
}}
"""


# Only in the script of a task that compares things (``SIDES``: see ``_offline_compare``).
_SIDES_BLOCK = """\
SIDES = {sides}


# A comparison: each side is searched for on its own. Its note (titled by it, or named whole by its search:
# an alias) gives its opening; else its section (headed by it); else the hit whose place names it and the
# aspect; else, when no hit kept is about it, the best hit that is (the side's words in its heading or
# path, or in its passage with no other side's words). The sides go first, in the order the task names them.
def has(text, words):
    return bool(words) and all(re.search(r"(?<![^\\W_])" + re.escape(w), text) for w in words)


def about(hit, words, others, aspect):
    where = " ".join([hit.get("heading") or "", hit["path"]]).lower()
    said = (hit.get("passage") or "").lower()
    on_aspect = not aspect or any(has(where + " " + said, [w]) for w in aspect)
    mixed = not any(has(said, [w]) for w in others) and not all(has(where, [w]) for w in others)
    return on_aspect and has(where + " " + said, words) and (has(where, words) or mixed)


def placed(key, words, aspect):
    where = key[1].lower() + " " + (key[2] or "").lower()
    return bool(aspect) and has(where, words) and any(has(where, [w]) for w in aspect)


def heading_named(keys, names, most=5):  # in the notes the side's search ranked highest (read once)
    for vault, path in list(dict.fromkeys((k[0], k[1]) for k in keys))[:most]:
        try:
            note = notes[vault, path] if (vault, path) in notes else obsidian.read_note(path, vault=vault)
        except Exception:
            continue
        notes[vault, path] = note
        for h in note.get("headings") or []:
            if h["text"].lower() in names:
                return {{"vault": vault, "path": path, "heading": h["text"], "passage": ""}}
    return None


def side_hit(query, names, bare, own, head, others, aspect):
    words = own + head
    used.append(query)
    found = []
    for rank, hit in enumerate(obsidian.search(query, limit=CANDIDATES)):
        key = (hit["vault"], hit["path"], hit.get("heading"))
        if key[1].endswith(".md"):
            found.append(key)
            pool.setdefault(key, [hit, rank])
            held.setdefault(key, words_in(hit))
        if rank == 0 and (hit.get("score", 0) >= 1.0 or title_of(key[1]) == bare):
            names = names + [title_of(key[1])]  # named whole by the search (an alias), or first by it
    ranked = found + [key for key in sorted(pool, key=lambda key: -fit(key)) if key not in found]
    titled = [key for key in ranked if title_of(key[1]) in names and key[1].endswith(".md")]
    if titled:  # the note's opening (as a search gave it, when one did)
        opened = [key for key in titled if not key[2]]
        if opened:
            return pool[opened[0]][0]
        return {{"vault": titled[0][0], "path": titled[0][1], "heading": None, "passage": ""}}
    # (a section headed by the bare side, "## Washed", in a note the side's own search found)
    heads = names + ([bare] if bare else [])
    headed = [pool[key][0] for key in ranked if (key[2] or "").lower() in (heads if key in found else names)]
    headed = headed or [heading_named(found, heads)]
    if headed[0] is not None:
        return headed[0]
    hit = next((pool[key][0] for key in ranked if placed(key, words, aspect)), None)
    if hit is None and not aspect:  # the side's own search, first: a section headed by the side's words
        hit = next((pool[key][0] for key in found[:1] if has((key[2] or "").lower(), own)), None)
    if hit is not None or any(about(h, words, others, aspect) for h in hits[:LIMIT]):
        return hit
    return next((pool[key][0] for key in ranked if about(pool[key][0], words, others, aspect)), None)


for at, side in enumerate(SIDES):
    hit = side_hit(*side)
    if hit is not None:  # first, in the order of the sides (moved there if already kept)
        same = [h for h in hits if (h["path"], h.get("heading")) == (hit["path"], hit.get("heading"))]
        for h in same:
            hits.remove(h)
        hits.insert(at, next((h for h in [hit, *same] if h.get("passage")), hit))
LIMIT = LIMIT + len(SIDES)


"""


def _hints(hints: Any) -> list[str]:
    if isinstance(hints, str):
        return [hints]
    if isinstance(hints, (list, tuple)):
        return [h for h in hints if isinstance(h, str)]
    return []


def _side_row(
    side: Side, sides: list[Side]
) -> tuple[str, list[str], str, list[str], list[str], list[str], list[str]]:
    """What the script knows of a side: its query, names, bare name, own words and head word's words, the
    other sides' words, the aspect's."""
    others = [w for other in sides if other is not side for w in other.words]
    return (
        side.query,
        list(side.names),
        side.bare,
        list(side.words),
        list(side.head),
        others,
        list(side.aspect),
    )


def retrieval_script(task: str, hints: Any = None) -> str:
    """The template filled for ``task`` (and optional ``hints``: more queries to try)."""
    task = " ".join(task.split())[:500]
    defined = DEFINED.match(task)
    sides = compared_sides(task)
    words = [w for w in parse_query(task).words() if len(w) > 1 and not (sides and w in COMPARING)][:12]
    queries = [task] if task else []
    if len(words) > 1:
        queries.append(" ".join(words))
    queries += [" ".join(h.split())[:200] for h in _hints(hints)]
    queries = [q for q in dict.fromkeys(queries) if q][:MAX_QUERIES]
    return _TEMPLATE.format(
        task_comment=task.replace("\n", " ")[:200] or "(none)",
        queries=repr(queries),
        words=repr(words),
        task_lower=repr(task.lower()),
        subject=repr(defined.group(1).lower() if defined else ""),
        sides_block=_SIDES_BLOCK.format(sides=repr([_side_row(side, sides) for side in sides]))
        if sides
        else "",
        names=repr(sorted(proper_names(task))),
        limit=LIMIT,
        candidates=CANDIDATES,
        rank_share=RANK_SHARE,
        section_chars=SECTION_CHARS,
    )
