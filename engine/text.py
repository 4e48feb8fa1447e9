"""Turn what a person types into FTS5 queries: stop words out, phrases and prefixes kept, safely quoted.

People ask questions ("how do I rest beans after roasting?"), not boolean expressions. The words that
carry no meaning are dropped, every remaining word is quoted (so FTS5 syntax in user text can never
break a query), and the caller tries a strict AND first and relaxes when it finds too little.
"""

from __future__ import annotations

import contextlib
import datetime
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache

import snowballstemmer

__all__ = [
    "AUXILIARIES",
    "STOP_WORDS",
    "ParsedQuery",
    "iso_dates",
    "iso_days_of_months",
    "parse_query",
    "points_back",
    "points_back_by_pronoun",
    "section_heading",
    "stem",
    "stems_of",
    "without_vault_wording",
]

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't
    down during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's
    her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it
    it's its itself let's me more most mustn't my myself no nor not of off on once only or other ought
    our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so some such
    than that that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll we're we've
    were weren't what what's when when's where where's which while who who's whom why why's with won't
    would wouldn't you you'd you'll you're you've your yours yourself yourselves s t d ll m re ve tell
    explain describe show give find list mention mentioned mentions say says said called known use used
    using uses way ways thing things kind kinds type types also get gets got much many one ones whose
    within without via per among across etc e g i e versus vs summarize summarise every
    """.split()
)

_TOKEN = re.compile(r'(-?)"([^"]*)"|(-?)([\w][\w\'’.+#-]*\w|\w)(\*?)', re.U)
_WORD = re.compile(r"\w+", re.U)
# A snowball stemmer keeps the word it works on in the instance: two threads sharing one garble each
# other's words (IndexError, or a wrong stem). Searches run in threads, so each thread has its own.
_stemmers = threading.local()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The English (Porter 2) stem of a lower-cased word; used for reranking and snippets."""
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    return str(stemmer.stemWord(word.lower()))


_AGENT = ("or", "er")


def stems_of(words: list[str] | set[str]) -> set[str]:
    """The stems of ``words``, and for a doer's noun its verb's too ("director" also holds "direct",
    "publisher" "publish"): a property named ``director`` answers "who directed ...?"."""
    out: set[str] = set()
    for word in words:
        w = word.lower()
        out.add(stem(w))
        if len(w) > 5 and w.endswith(_AGENT):
            out.add(stem(w[:-2]))
    return out


@dataclass
class ParsedQuery:
    terms: list[str] = field(default_factory=list)  # plain words, lower-case, stop words removed
    prefixes: list[str] = field(default_factory=list)  # words typed with a trailing '*'
    phrases: list[list[str]] = field(default_factory=list)  # quoted phrases, as word lists
    excluded: list[str] = field(default_factory=list)  # words or phrases after '-'
    dropped: list[str] = field(default_factory=list)  # stop words we removed
    # other words a term may match (its synonyms, when the vault never uses the term itself)
    alternatives: dict[str, list[str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.terms or self.prefixes or self.phrases)

    def clauses(self) -> list[str]:
        """Each positive clause as a quoted FTS5 expression."""
        out = [self._either(t) for t in self.terms]
        out += [f"{_quote(p)} *" for p in self.prefixes]
        out += [_quote(" ".join(words)) for words in self.phrases]
        return out

    def _either(self, term: str) -> str:
        others = self.alternatives.get(term)
        if not others:
            return _quote(term)
        return "(" + " OR ".join(_quote(w) for w in [term, *others]) + ")"

    def negation(self) -> str:
        return "".join(f" NOT {_quote(x)}" for x in self.excluded)

    def strict(self) -> str:
        """Every clause must match."""
        return " AND ".join(self.clauses()) + self.negation()

    def relaxed(self, clauses: list[str] | None = None) -> str:
        """Any clause may match."""
        chosen = clauses if clauses is not None else self.clauses()
        return "(" + " OR ".join(chosen) + ")" + self.negation()

    def words(self) -> list[str]:
        """All positive words (terms, prefixes and phrase words), for reranking and snippets."""
        words = list(self.terms) + list(self.prefixes)
        for phrase in self.phrases:
            words.extend(phrase)
        for others in self.alternatives.values():
            words.extend(w for other in others for w in other.split())
        return list(dict.fromkeys(words))


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def parse_query(text: str) -> ParsedQuery:
    """Split a query into terms, ``prefix*`` words, ``"quoted phrases"`` and ``-excluded`` words."""
    q = ParsedQuery()
    for m in _TOKEN.finditer(text):
        neg_phrase, phrase, neg_word, word, star = m.groups()
        if phrase is not None:
            words = [w.lower() for w in _WORD.findall(phrase)]
            if not words:
                continue
            if neg_phrase:
                q.excluded.append(" ".join(words))
            elif len(words) == 1:
                q.terms.append(words[0])
            else:
                q.phrases.append(words)
            continue
        lowered = word.lower().replace("’", "'")
        if lowered in STOP_WORDS and not star and not neg_word:
            q.dropped.append(lowered)
            continue
        if lowered.endswith("'s"):
            lowered = lowered[:-2]
        parts = [w.lower() for w in _WORD.findall(lowered)]
        if not parts:
            continue
        if neg_word:
            q.excluded.append(" ".join(parts))
        elif len(parts) > 1:
            # "tcp/ip", "e-mail", "node.js": keep the parts together as a phrase, like the index sees them.
            q.phrases.append(parts)
        elif star:
            q.prefixes.append(parts[0])
        elif parts[0] in STOP_WORDS:
            q.dropped.append(parts[0])
        else:
            q.terms.append(parts[0])
    if q.empty and q.dropped:
        # A query made only of stop words ("to be or not to be") is taken literally.
        q.terms, q.dropped = q.dropped, []
    q.terms = list(dict.fromkeys(q.terms))
    return q


_JOINER = re.compile(r"(?:\s*(?:[:\u2014\u2013-]|\b(?:of|for|on|about|in|regarding|to)\b))+\s*$", re.I)


def section_heading(task: str, goal: str, fallback: str = "") -> str:
    """A report section's heading: the subtask's own words, without the goal it repeats
    ("Define the key terms and scope of: <goal>" -> "Define the key terms and scope"). A task that is
    only the goal becomes ``fallback`` (the node id, made readable); a task that is one clause of the
    goal stays as it is, capitalised."""
    words = " ".join(task.split())
    whole = " ".join(goal.split())
    if whole and len(whole) > 12:
        at = words.lower().find(whole.lower().rstrip(" ?.!"))
        if at >= 0:
            rest = (words[:at] + words[at + len(whole.rstrip(" ?.!")) :]).strip(" ?.!")
            words = _JOINER.sub("", rest).strip(" :?.!")
    if not words:
        words = fallback.replace("_", " ").strip()
    return words[:1].upper() + words[1:] if words else task


_MONTHS = {
    m[:3]: i
    for i, m in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}
_MONTH = (
    r"(?P<month>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:1[89]|20)\d\d)"
_DATES = (
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I),  # August 20, 2022
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I),  # 20 August 2022
)


def iso_dates(text: str) -> list[str]:
    """The dates ``text`` writes in words ("August 20, 2022", "20th of Aug 2022"), as ISO dates
    ("2022-08-20"): the form daily notes and dated notes are named by."""
    found: list[str] = []
    for pattern in _DATES:
        for m in pattern.finditer(text):
            month, day = _MONTHS.get(m.group("month")[:3].lower(), 0), int(m.group("day"))
            with contextlib.suppress(ValueError):  # "June 31": no date
                found.append(datetime.date(int(m.group("year")), month, day).isoformat())
    return list(dict.fromkeys(found))


# The auxiliary verbs a question puts after its subject's kind ("which plugin *does* ...", "where *is* ..."),
# as a regular-expression alternation.
AUXILIARIES = "does|do|did|is|are|was|were|can|could|should|would|will|has|have|had"


# A month and year without a day ("January 2022", "mid-Jan 2022"); early, mid and late narrow it to a third.
_MONTH_YEAR = re.compile(rf"\b(?:(?P<part>early|mid|late)[- ])?{_MONTH},?\s+(?:of\s+)?{_YEAR}\b(?!-)", re.I)
_THIRDS = {"early": (1, 10), "mid": (11, 20), "late": (21, 31)}


def iso_days_of_months(text: str) -> list[list[str]]:
    """For each month ``text`` writes in words without a day ("January 2022", "mid-January 2022"), the ISO
    dates it spans ("2022-01-01" ... "2022-01-31"; "mid-" the 11th to the 20th, "early-" to the 10th,
    "late-" from the 21st): what dated notes of that month are named by. A full date ("August 20, 2022")
    is ``iso_dates``'."""
    spans: list[list[str]] = []
    for m in _MONTH_YEAR.finditer(text):
        before = text[max(0, m.start() - 8) : m.start()]
        if re.search(r"\d\s*(?:st|nd|rd|th)?\s*(?:of\s*)?$", before, re.I):  # "20 August 2022": a day
            continue
        month, year = _MONTHS.get(m.group("month")[:3].lower(), 0), int(m.group("year"))
        first, last = _THIRDS.get((m.group("part") or "").lower(), (1, 31))
        days: list[str] = []
        for day in range(first, last + 1):
            with contextlib.suppress(ValueError):  # past the month's end
                days.append(datetime.date(year, month, day).isoformat())
        if days and days not in spans:
            spans.append(days)
    return spans


# Words that point back to something an earlier clause asked for: a noun ("that developer") or a pronoun
# ("its", "they"; "it" too: "..., and who developed it?").
_POINTED_NOUN = re.compile(
    r"\b(?:that|this|those|these|the same|such)\s+(?!is\b|are\b|was\b|were\b|has\b|have\b|can\b|will\b)"
    r"[a-z]",
    re.I,
)
# ("each", "both", "either" as a pronoun: at the clause's end or before "of". "When would I use *each*?"
# points back at TCP and UDP; "each note" does not.)
_PRONOUN = re.compile(
    r"\b(?:he|she|him|her|his|hers|they|them|their|its|it|the former|the latter)\b"
    r"|\b(?:each|both|either|neither)\b(?=\s*(?:[?!.,;:]|$|of\b))",
    re.I,
)
_BACK_REFERENCE = re.compile(f"{_POINTED_NOUN.pattern}|{_PRONOUN.pattern}", re.I)


def points_back(clause: str) -> bool:
    """Whether ``clause`` points back at what an earlier one asked for ("what website does *that
    developer* list?"): the second step of a two-step question, which means nothing on its own."""
    return _BACK_REFERENCE.search(clause) is not None


def points_back_by_pronoun(clause: str) -> bool:
    """Whether ``clause`` points back with a pronoun only ("who developed *it*?"): at the thing an earlier
    clause found, whose own note may answer, rather than at another one it leads to ("*that developer*")."""
    return _PRONOUN.search(clause) is not None and _POINTED_NOUN.search(clause) is None


# Words that name the vault itself as where to look ("what my notes say about Docker", "... in my vault"):
# they say where, not what. Searched for, "vault" finds a note on a bank vault, and an ask that must find
# them in a passage is never covered.
_BEFORE_MARK = re.compile(r"\s+([?.!,;:])")
_VAULT = r"(?:the|my|this|our)\s+(?:vault|notes|knowledge\s+base|second\s+brain)"
_VAULT_WORDING = re.compile(
    rf"\b(?:what|everything|anything|all)\s+(?:that\s+)?{_VAULT}\s+"
    r"(?:says?|said|has|have|holds?|contains?|knows?|mentions?)\s+(?:about|on|regarding)\s+"
    rf"|\b(?:do|does|did)\s+{_VAULT}\s+(?:say|have|mention|hold|contain)\s+(?:anything\s+)?"
    r"(?:about|on|regarding)\s+"
    rf"|\b(?:in|from|across|within|throughout)\s+{_VAULT}\b"
    r"(?=\s*(?:[?.!,;:]|$|about\b|on\b|regarding\b|that\b|which\b|for\b|and\b))",  # not "in the vault folder"
    re.I,
)


def without_vault_wording(text: str) -> str:
    """``text`` without the words that name the vault as where to look: "Summarize what the vault says
    about Docker" asks about Docker. Unchanged when nothing else would be left."""
    if _VAULT_WORDING.search(text) is None:
        return text
    return _BEFORE_MARK.sub(r"\1", " ".join(_VAULT_WORDING.sub(" ", text).split())) or text
