"""Text helpers of the offline provider: terms and extractive ranking. No model anywhere.

A context item's text is Markdown, split into quotable units by ``_offline_units`` (``passages``,
``display_text``, re-exported here). ``rank_passages``
scores each passage by the query terms it contains (stemmed, stop words out), each term weighted by its rarity
among the passages (idf); terms found only in the item's heading or note path count at a lower weight.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..strategies import antecedent
from ..text import AUXILIARIES, STOP_WORDS, parse_query, stem, stems_of
from ._offline_subject import NO_SUBJECT, Subject
from ._offline_units import BLOCK_ID as _BLOCK_ID
from ._offline_units import CODE_SPAN as _CODE_SPAN
from ._offline_units import MAX_PASSAGE_CHARS, display_text, passages, quotable_units, split_sentences
from ._offline_units import WORD as _WORD

__all__ = [
    "DEFINED",
    "Passage",
    "answer_weight",
    "as_text",
    "asked_kinds",
    "asked_nouns",
    "display_text",
    "estimate_tokens",
    "passages",
    "pointed_terms",
    "properties",
    "rank_passages",
    "split_sentences",
    "stream_text",
    "table_header",
    "terms",
    "wanted_answers",
]

LABEL_SHARE = 0.6
KIND_BONUS = 0.1
RANK_BONUS = 0.05
TOPIC_BONUS = 0.15
SUBJECT_BONUS = 0.3
_QUANTITY = re.compile(
    r"\b(?:how (?:many|much|long|often|far|big|large|high|fast|old)|what (?:percentage|number|port|size|"
    r"speed|temperature|ratio|value|year|version)|which (?:port|number|value|year|version)|number of)\b",
    re.I,
)
# "Who wrote / made / developed X?" is answered by a byline ("By Eliezer Yudkowsky and Nate Soares").
_WHO_MADE = re.compile(
    r"\bwho\b.{0,40}?\b(?:(?:co-?)?(?:wrote|writes|written|authored)|created|made|developed|designed|built|"
    r"directed|founded|invented|maintains|publishe[sd])\b",
    re.I,
)
_BYLINE = re.compile(
    r"^\W*by\s+[A-Z\[]|\b(?:(?:co-?)?written|authored|created|made|developed|designed|built|directed|"
    r"founded|invented|maintained|published)\s+by\b|^\W*(?:authors?|developed by|creators?|maintainers?)\b",
    re.I,
)
# "Why ...?" is answered by a passage that gives a cause or a purpose.
_WHY = re.compile(r"\bwhy\b|\bwhat (?:causes|makes)\b|\bfor what reason\b", re.I)
# "What theme did she make?", "Which plugins has he released?": the thing asked for, by its kind. A section
# headed by that kind ("### Themes") lists the answers, though no item of it says "theme". The kind may
# follow a word that narrows it ("Which Obsidian theme is ...?"): both words are taken.
_ASKED_KIND = re.compile(
    rf"\b(?:what|which)\s+(?!(?:{AUXILIARIES}|kind|type|sort|one|ones|of)\b)([a-z][a-z-]{{2,}})\b"
    rf"(?:\s+(?!(?:{AUXILIARIES})\b)([a-z][a-z-]{{2,}})\b)?"
    # "List every plugin made by pjeby", "Name all the themes ...": the kind, as an instruction
    r"|^\s*(?:list|name)\s+(?:all\s+(?:of\s+)?(?:the\s+)?|every\s+|each\s+|the\s+)?(?!of\b)([a-z][a-z-]{2,})\b",
    re.I,
)
# "Where does the total show up?", "Where do we go to report a bug?": a place is asked for (not "choosing
# where to host", whose "where" is no question).
_WHERE = re.compile(rf"\bwhere\s+(?:{AUXILIARIES})\b", re.I)
# A passage that says where something is: a position, a container, or an address to go to.
_PLACE = re.compile(
    r"\b(?:at the (?:top|bottom|end|start|beginning|side|left|right)|on the (?:left|right|top|bottom)|"
    r"in(?:side)? (?:the|your|a|its|this) (?:[\w.-]+ ){0,2}(?:folder|directory|sidebar|menu|pane|panel|"
    r"toolbar|settings|corner|bar|tab|window|view|vault|file|section|forum)|inside|under(?:neath)? the|"
    r"located|stored|placed|appears?|displayed|shown|next to|above|below)\b|https?://",
    re.I,
)
_REASON = re.compile(
    r"\b(?:because|causes?|caused by|due to|so that|in order to|leads? to|results? in|which means|"
    r"that's why|the reason|prevents?)\b",
    re.I,
)
_DIGIT = re.compile(r"(?<![^\W_])\d")  # a number, not the digit in "CO2" or "x86"
# "What is X?", and the asks for an account of X ("Summarize X", "Tell me about X"): X's own note opens
DEFINED = re.compile(
    r"^\s*(?:(?:what|who)\s+(?:is|are|was|were)|summari[sz]e|tell\s+me\s+about|give\s+(?:me\s+)?an\s+"
    r"overview\s+of|describe)\s+(?:an?\s+|the\s+)?(.{2,60}?)\s*[?.]?\s*$",
    re.I,
)
ANSWER_BONUS = 0.1
POINTER_PENALTY = 0.2
_STEP = re.compile(
    r"^(?:to [\w -]{2,60}?[,:]|(?:click|select|open|type|press|add|use|go to|enter|choose|drag|run|enable|"
    r"disable|set|create|install|right-click|navigate)\b)",
    re.I,
)
# "How do I release my plugin?" is answered by the steps of a procedure.
_HOW_TO = re.compile(
    r"\bhow (?:do|can|should|would|could|to) (?:i|you|we|one)\b|\bhow to\b|\bsteps? to\b", re.I
)
_COMPARING = frozenset(stem(w) for w in ("compare", "comparison", "contrast"))
_COMPARE_VERB = re.compile(r"\W*(?:compare|contrast)\b", re.I)  # the instruction a goal opens with
_PARTS = re.compile(
    r"\b(?:made (?:up )?of|consists? of|consisting of|(?:composed|comprised) of|comprises?|components?|"
    r"parts of|elements of|ingredients|pieces of)\b",
    re.I,
)
_POINTER = re.compile(
    r"\b(?:see|check out|refer to|learn (?:more|how)|read more|for more|more in[- ]depth|"
    r"(?:are|is) (?:commonly|frequently) asked)\b",
    re.I,
)


def as_text(value: object) -> str:
    """``value`` if it is a string, else "" (a request's inputs come from anywhere)."""
    return value if isinstance(value, str) else ""


def estimate_tokens(text: str) -> int:
    """About four characters per token (the offline provider has no tokenizer; it says so)."""
    return (len(text) + 3) // 4


# Words a note's properties use for what a question calls otherwise: "url: https://stephango.com/" is
# the "personal website" asked for.
_SAME_STEM = {"url": "websit", "homepag": "websit", "site": "websit"}


# Words that ask how the things an earlier clause found relate ("how do they differ?"), not what a passage
# about them holds: a passage that says "different" is not the answer.
_RELATING = frozenset(
    stem(w) for w in ("compare", "comparison", "contrast", "differ", "difference", "similar")
)


def with_antecedent(task: str, goal: str) -> str:
    """``task`` made to stand alone when it is a clause of ``goal`` that points back at the one before it
    (``antecedent``): that clause, then the task's words that do not ask how things relate. "Which plugins
    help me write math, and how do they differ?": its second step is about the math plugins."""
    lead = antecedent(task, goal)
    if not lead:
        return task
    own = [w for w in task.split() if stem(w.strip("?!.,;:").lower()) not in _RELATING]
    return " ".join([lead, *own])


def terms(text: str) -> list[str]:
    """Content-word stems of ``text``, in order, without duplicates."""
    words: list[str] = []
    for w in parse_query(text).words():
        words += _WORD.findall(w)
    stems = (stem(w) for w in words if w)
    return list(dict.fromkeys(_SAME_STEM.get(s, s) for s in stems))


# The noun a clause points back with ("what website does *that developer* list?"): it names what an earlier
# step found, not words to look for.
_POINTED = re.compile(
    r"\b(?:that|this|those|these|such|the same)\s+(?:same\s+)?"
    r"(?!is\b|are\b|was\b|were\b|has\b|have\b|can\b|will\b|does\b|did\b)([a-z][\w-]*)",
    re.I,
)


def pointed_terms(query: str) -> frozenset[str]:
    """Stems of the nouns ``query`` points back with ("developer" in "that developer")."""
    return frozenset(t for m in _POINTED.finditer(query) for t in terms(m.group(1)))


def _stems(text: str) -> set[str]:
    return {_SAME_STEM.get(s, s) for s in stems_of(_WORD.findall(text.lower()))}


def clip(text: str, limit: int = MAX_PASSAGE_CHARS) -> str:
    """At most ``limit`` characters, cut at a word boundary and marked with " …"."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut + " …"


@dataclass(frozen=True)
class Passage:
    text: str
    item: int  # index of the context item it came from
    index: int  # position within that item
    score: float
    matched: tuple[str, ...]
    coverage: float = 0.0  # weighted share of the query's terms in the passage or its label
    gives: tuple[str, ...] = ()  # the kinds of answer the query wants that it holds (``wanted_answers``)


def wanted_answers(query: str) -> set[str]:
    """The kinds of answer ``query`` asks for, beyond its words: a quantity ("number"), a cause
    ("reason"), a place ("where does ...?": a position, a folder, an address), who made something
    ("maker"), what something is ("definition"), how to do something (the "steps": the items of a
    numbered list; an imperative sentence alone is no procedure), what something is made of (the
    "parts": a short list and the line introducing it)."""
    kinds = {"number"} if _QUANTITY.search(query) else set()
    kinds |= {"reason"} if _WHY.search(query) else set()
    kinds |= {"place"} if _WHERE.search(query) else set()
    kinds |= {"maker"} if _WHO_MADE.search(query) else set()
    kinds |= {"listed"} if _ASKED_KIND.search(query) else set()
    kinds |= {"steps"} if _HOW_TO.search(query) else set()
    kinds |= {"parts"} if _PARTS.search(query) else set()
    return kinds | ({"definition"} if _definition_pattern(query) else set())


def asked_nouns(query: str) -> frozenset[str]:
    """Stems of the last word of each kind ``query`` asks for: "boundaries" of "which plate boundaries"."""
    return frozenset(
        stem(words[-1].lower())
        for m in _ASKED_KIND.finditer(query)
        if (words := [w for w in m.groups() if w and w.lower() not in STOP_WORDS])
    )


def asked_kinds(query: str) -> frozenset[str]:
    """Stems of the kind of thing ``query`` asks for ("Which *plugins* ...?", "List every *theme* ...")."""
    return frozenset(
        stem(word.lower())
        for m in _ASKED_KIND.finditer(query)
        for word in m.groups()
        if word and word.lower() not in STOP_WORDS
    )


def _gives(
    text: str,
    heading: str,
    wanted: set[str],
    defines: re.Pattern[str] | None,
    asked: frozenset[str],
    numbered: bool = False,
    listed: bool = False,
) -> tuple[str, ...]:
    checks: dict[str, Callable[[], object]] = {
        "steps": lambda: numbered,  # an item of a numbered list: a step of a procedure
        "parts": lambda: listed,  # "A collection of: AI Model; Reasoning loop; Tools"
        "listed": lambda: asked & _stems(heading),  # "What theme ...?" under "### Themes"
        "number": lambda: _DIGIT.search(text),
        "reason": lambda: _REASON.search(text) or _WHY.search(heading),  # "## Why beans degas"
        "place": lambda: _PLACE.search(text),  # "... is displayed at the top of the group"
        "maker": lambda: _BYLINE.search(text),
        "definition": lambda: defines and defines.search(" ".join(_WORD.findall(text.lower()))),
    }
    return tuple(kind for kind in sorted(wanted) if checks[kind]())


def rank_passages(
    query: str,
    items: list[tuple[str, str]],
    *,
    extra: str = "",
    extra_weight: float = 0.5,
    referents: frozenset[int] = frozenset(),
    subject: Subject = NO_SUBJECT,
) -> list[Passage]:
    """Passages of ``items`` ((label, text) pairs; the label is the item's heading and note path) that
    bear on ``query``, best first. ``extra`` (the overall goal) adds its terms at ``extra_weight``.

    Each term weighs ``weight x idf`` (idf over all passages). A passage scores the weighted share of
    the query's terms it contains, plus ``LABEL_SHARE`` x the share found only in its label (a list item
    "7.4 Gbps" under "Dual-Link" is about what its heading says), plus ``TOPIC_BONUS`` x the share found
    in its label at all (the note is about the subject), plus ``KIND_BONUS`` for each kind of answer the
    query asks for that the passage holds (``wanted_answers``: a number for "how many", a byline for "who
    wrote", a cause for "why", "X is ..." for "what is X?"),
    plus ``answer_weight`` (a passage that states a syntax, a number or a step goes before one that only
    mentions the topic or points elsewhere), plus up to ``RANK_BONUS`` for items the retrieval ranked
    first. A passage must contain, or sit under a label
    containing, at least one term of ``query`` itself. Ties keep item order, then passage order.

    ``referents``: the items that are what ``query`` points back at (the notes one link from what an
    earlier step found, for "that developer"): the pointed noun is theirs, as if in their label, and
    counts for no other item (the note *Developer-Mike* is not "that developer").

    ``subject``: the items linked with a note ``query`` names (``_offline_subject``): their passages
    score ``SUBJECT_BONUS`` more, and so do the named note's lists of links (what connects it with them:
    the plugins a person's note lists) and its passages that hold more of the query than the name (not
    the person's web address). A linked note that holds no word of the query is about the named note, as
    if its title were in its label."""
    q_terms = terms(query)
    parts = _PARTS.search(query)
    if parts:  # "made up of" asks for the parts; a passage with "made" in it is not about them
        q_terms = [t for t in q_terms if t not in terms(parts.group(0))] or q_terms
    # "Compare A with B" asks about A and B; a passage that says "comparing" is not about them ("A laptop
    # adapter is compared to which component?" asks what the vault compares it to)
    told = _COMPARING if _COMPARE_VERB.match(query) else frozenset()
    q_terms = [t for t in q_terms if t not in told] or q_terms
    weights = dict.fromkeys(q_terms, 1.0)
    for t in terms(extra):
        if not (t in _COMPARING and _COMPARE_VERB.match(extra)):
            weights.setdefault(t, extra_weight)
    if not weights:
        return []
    units = [
        (i, j, p, _stems(_ADDRESS.sub(" ", p)), _stems(heading), links, heading, step, listed)
        for i, (_, text) in enumerate(items)
        for j, (p, heading, links, step, listed) in enumerate(quotable_units(text))
    ]
    if not units:
        return []
    n = len(units)
    idf = {t: math.log(1 + n / (1 + sum(1 for u in units if t in u[3]))) + 0.1 for t in weights}
    total = sum(weights[t] * idf[t] for t in weights)
    labels = [_stems(label) for label, _ in items]
    # A property line is about what the note's other properties say it is: "coordinates: 34.96, 135.76" of
    # a note typed "Parks, Shrines" is a shrine park's. Their values only ("start: 2023-09-12" is no
    # answer to "get started"), and for property lines only: a body passage is not about the notes its
    # "references:" list.
    props = [properties(text) for _, text in items]
    described = [_stems(" ".join(p.split(":", 1)[1] for p in lines)) for lines in props]
    wanted = wanted_answers(query)
    maker = _WHO_MADE.search(query)
    # A byline answers the question's own "wrote" / "developed": it holds those words, in effect.
    maker_terms = [t for t in terms(maker.group(0)) if t in weights] if maker else []
    defines = _definition_pattern(query)
    asked = asked_kinds(query)
    pointed = pointed_terms(query) if referents else frozenset()
    if pointed:
        labels = [label | pointed if i in referents else label - pointed for i, label in enumerate(labels)]
    named = set(terms(" ".join(subject.titles)))
    # Of the notes linked with the named one, those that hold no word of the query ("artist: Paul
    # Chambers" of the album the query names; his note says "type: Musicians")
    wanted_terms = set(q_terms)
    orphans = {i for i in subject.linked if not any(wanted_terms & u[3] for u in units if u[0] == i)}
    dated = bool(_DATED.search(query))
    ranked: list[Passage] = []
    for i, j, text, stems, local, links, heading, step, listed in units:
        if links and not any(t in local for t in q_terms):
            continue  # a list of links under a heading that does not name what the query asks for
        if (links or _BOLD_LINE.fullmatch(text)) and _says_nothing_new(text, weights):
            continue
        if _names_only(text, weights, dated):
            continue
        gives = _gives(text, heading, wanted, defines, asked, step, listed)
        byline = "maker" in gives
        own = [t for t in weights if t in stems or (byline and t in maker_terms)]
        about = labels[i] | described[i] if text in props[i] else labels[i]
        if i in orphans:  # reached only through the note the query names: about what that note is
            about = about | named
        inherited = [t for t in weights if (t in about or t in local) and t not in stems]
        if pointed:
            own = [t for t in own if t not in pointed]
            inherited = [
                t for t in weights if t not in own and (i in referents if t in pointed else t in inherited)
            ]
        if q_terms and not any(t in q_terms for t in own + inherited):
            continue  # only goal words, or nothing: not about this subtask
        if not own and not inherited:
            continue
        score = sum(weights[t] * idf[t] for t in own) / total
        coverage = score + sum(weights[t] * idf[t] for t in inherited) / total
        score += LABEL_SHARE * sum(weights[t] * idf[t] for t in inherited) / total
        score += TOPIC_BONUS * sum(weights[t] * idf[t] for t in weights if t in labels[i]) / total
        score += KIND_BONUS * len(gives)
        score += answer_weight(text)
        score += RANK_BONUS * (1 - i / len(items))
        # The named note's own lines count when they say more than its name ("GitHub: Razumihin" says
        # nothing of Razumihin's plugin; a list of his plugins does)
        about_subject = i in subject.linked or (i in subject.named and (links or bool(set(own) - named)))
        score += SUBJECT_BONUS if about_subject else 0.0
        ranked.append(Passage(text, i, j, round(score, 6), tuple(own + inherited), round(coverage, 6), gives))
    ranked.sort(key=lambda p: (-p.score, p.item, p.index))
    return ranked


def _says_nothing_new(text: str, weights: dict[str, float]) -> bool:
    """Whether every word of ``text`` is one of the question's (``weights``). For a link's label or a bold
    line that stands as a heading ("Security and privacy", "**Linking to a heading in another note**"),
    that only repeats the question; a property or a sentence may still answer it ("Mobile compatible:
    No"), and a number or a code span is something the question did not say."""
    if _DIGIT.search(text) or _CODE_SPAN.search(text):
        return False
    own = terms(text)
    return bool(own) and all(t in weights for t in own)


# A web address, or a code span that is an identifier ("`obsidian-spaced-repetition`", "`tcp/502`"): words
# inside one name a thing, they do not say anything of it ("switches" is not in "carlrobert/double-switch").
_ADDRESS = re.compile(r"\(?https?://[^\s)]*\)?|`[\w.]*[-_/][\w./-]*`")
_LABELLED = re.compile(r"([^:`]{1,40}):\s*(.*)")
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?")
_DATED = re.compile(r"\b(?:when|date|dated|year|day|month|how (?:old|long ago)|since)\b", re.I)
# a link's label of several words, as written, "[Edit In GitHub](https://...)", or as displayed, "Edit In
# GitHub (https://...)": what to click, not what the line says (a one-word label, "janisringli", is a name)
_LINK_LABEL = re.compile(
    r"\[[^\]\s]*\s[^\]]*\](?=\s*\(?https?:)|(?:^|(?<=\|))\s*[^()|\[\]\s]+\s+[^()|\[\]\s][^()|\[\]]*(?=\(https?:)"
)


def _names_only(text: str, weights: dict[str, float], dated: bool = False) -> bool:
    """Whether ``text`` is a label and only addresses or identifiers ("Plugin ID: `double-switch`", "This
    note in GitHub: [Edit In GitHub](https://...)"), or only a date when the question does not ask when
    (``dated``: "created: 2023-09-14" of a note on evergreen notes, for how notes are organised), and the
    question does not ask for what the label names (it asks for "website": then "Website:
    https://kon.foo/" is the answer; "When was it published?": "published: 2022-09-16")."""
    m = _LABELLED.fullmatch(text.strip())
    if m is None or not m.group(2).strip():
        return False
    value = _ADDRESS.sub(" ", _LINK_LABEL.sub(" ", m.group(2))).strip(" ,;|.-")
    if value and not (_DATE_ONLY.fullmatch(value) and not dated):
        return False  # the value says something (a date, to a question that asks when)
    return not all(t in weights for t in terms(m.group(1)))


_BOLD_LINE = re.compile(r"(\*\*|__)[^*_]+\1[.:]?")  # a line that is one bold phrase
_PROPERTY = re.compile(r"[A-Za-z][\w -]{0,40}: \S.*")


def properties(text: str) -> list[str]:
    """The property lines ("type: Parks, Shrines") a context item's text opens with."""
    lines = []
    for line in text.lstrip("\n").split("\n"):
        if not _PROPERTY.fullmatch(line.strip()):
            break
        lines.append(line.strip())
    return lines


def answer_weight(text: str) -> float:
    """``ANSWER_BONUS`` for a passage that states an answer (a syntax in code, a number, a step);
    ``-POINTER_PENALTY`` for one that only points elsewhere ("see ...", "for more ..."), asks a
    question instead of answering it, or introduces something it does not show (ends with ":")."""
    bare = _CODE_SPAN.sub(" ", text)
    if bare.rstrip(" *_").endswith("?") or (_POINTER.search(bare) and len(_WORD.findall(bare)) < 25):
        return -POINTER_PENALTY
    if _CODE_SPAN.search(text) or _DIGIT.search(bare) or _STEP.match(bare):
        return ANSWER_BONUS
    return -POINTER_PENALTY if bare.rstrip(" *_").endswith(":") else 0.0


def _definition_pattern(query: str) -> re.Pattern[str] | None:
    """For "what is X?": a pattern for passages that define X ("X is ...", "this is X")."""
    m = DEFINED.match(query)
    if not m:
        return None
    subject = " ".join(_WORD.findall(m.group(1).lower()))
    if not subject:
        return None
    s = re.escape(subject)
    return re.compile(rf"\b{s} (?:is|are|was|were|means|refers)\b|\b(?:this|that|it) is (?:an? |the )?{s}\b")


def norm_key(text: str) -> str:
    """A passage's identity for de-duplication: its words, lower-cased."""
    return " ".join(_WORD.findall(text.lower()))


_PIECE = re.compile(r"\S+\s*|\s+")
STREAM_WORDS = 8  # words per streamed piece: a few pieces per line, as a model's deltas would come


async def stream_text(text: str, sink: Callable[[str, bool], None]) -> None:
    """Hand ``text`` to ``sink`` a few words at a time, yielding to the loop between pieces, so the
    offline provider's extractive answer streams into a notebook the way a model's answer does."""
    words = _PIECE.findall(text)
    for i in range(0, len(words), STREAM_WORDS):
        sink("".join(words[i : i + STREAM_WORDS]), i == 0)
        await asyncio.sleep(0)


_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")


def table_header(text: str, row: str) -> tuple[str, str] | None:
    """The header line and rule line of the Markdown table ``row`` (a passage) comes from in ``text``,
    or None when the row is not in a table with a header (or is the header itself)."""
    lines = [line.strip() for line in display_text(text).split("\n")]
    wanted = " ".join(row.split())
    for at, line in enumerate(lines):
        if not line.startswith("|") or " ".join(_BLOCK_ID.sub("", line).split()) != wanted:
            continue
        start = at
        while start > 0 and lines[start - 1].startswith("|"):
            start -= 1
        if at - start >= 2 and _RULE.match(lines[start + 1]):
            return lines[start], lines[start + 1]
    return None
