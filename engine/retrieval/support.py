"""Support checks (E9): does the passage a claim cites say what the claim says?

A *claim* is a statement of an answer (a list item, a table row or a sentence of a line) that carries
at least one citation; a sentence without its own citation takes the next one on its line. Citations
inside code are not citations, and a wikilink shown as a syntax (`` `![[Note#Heading]]` ``) is part of
the claim's words.

Each (claim, citation) pair is checked against the cited *span*: the context item the answer was given
for that citation, else the cited section of the note as it is now. Without a model the check is
lexical (``lexical_check``): at least ``LEXICAL_SHARE`` of the claim's content words (stemmed, stop
words out) and every number it states must appear in the span or its label (the note's path and the
heading). With a model, ``judge_prompt_items`` and ``parse_verdicts`` carry one batched JUDGE-tier call.
A claim is supported when one of its citations supports it. Unsupported claims are flagged in the text
(``flag_unsupported``), never silently kept.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ..text import STOP_WORDS, stem
from ..vault import Note, VaultSet
from .citations import extract_citations, resolve_citations

__all__ = [
    "LEXICAL_SHARE",
    "UNSUPPORTED_MARK",
    "Claim",
    "Verdict",
    "claims_of",
    "content_terms",
    "flag_unsupported",
    "has_term",
    "lexical_check",
    "parse_verdicts",
    "span_texts",
]

LEXICAL_SHARE = 0.6
SPAN_CHARS = 4000
UNSUPPORTED_MARK = "⚠ unsupported"
_LINK = re.compile(r"(!?)\[\[([^\[\]\n]{1,500}?)\]\]")
_CODE = re.compile(r"`+[^`\n]+?`+")
_WORD = re.compile(r"[^\W_]+", re.U)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")
_LEAD = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\[`A-Z0-9])|(?<=\]\])\s+(?=[`A-Z0-9])")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKS = re.compile(rf"{UNSUPPORTED_MARK}|⚠ unresolved(?: \([^)]*\))?")  # Shad's own flags are not words


@dataclass
class Claim:
    """One cited statement: its words (citations out), its citations as written, and its line."""

    text: str
    citations: list[str]
    line: int


@dataclass
class Verdict:
    claim: str
    citations: list[str]
    supported: bool
    reason: str
    method: str  # "lexical" | "judge"
    line: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("extra")
        return data


def _blank_code(text: str) -> str:
    return _CODE.sub(lambda m: " " * len(m.group(0)), text)


def _cites(piece: str) -> list[str]:
    """Citations (not embeds, not inside code) of one piece of text, as written."""
    blanked = _blank_code(piece)
    return list(dict.fromkeys(piece[m.start() : m.end()] for m in _LINK.finditer(blanked) if not m.group(1)))


def _without_cites(piece: str) -> str:
    blanked = _blank_code(piece)
    out, last = [], 0
    for m in _LINK.finditer(blanked):
        if not m.group(1):
            out.append(piece[last : m.start()])
            last = m.end()
    out.append(piece[last:])
    text = _MARKS.sub(" ", "".join(out))
    return " ".join(text.replace("**", "").replace("__", "").split())


def claims_of(answer: str) -> list[Claim]:
    """Every cited statement of ``answer`` (headings, code blocks and uncited statements are not claims)."""
    out: list[Claim] = []
    fenced = False
    for number, raw in enumerate(answer.splitlines()):
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        line = _LEAD.sub("", raw).strip()
        if fenced or not line or line.startswith("#") or "[[" not in line:
            continue
        pieces: list[tuple[str, list[str]]] = []
        blanked = _blank_code(line)
        cuts = [0, *(m.start() for m in _SENTENCE.finditer(blanked)), len(line)]
        for a, b in itertools.pairwise(cuts):
            piece = line[a:b]
            lead = re.match(r"^\s*((?:\[\[[^\[\]\n]+?\]\]\s*)+)", piece)
            if lead and pieces:  # citations opening a sentence belong to the one before
                pieces[-1] = (pieces[-1][0], pieces[-1][1] + _cites(lead.group(1)))
                piece = piece[lead.end() :]
            if piece.strip():
                pieces.append((piece, _cites(piece)))
        for k, (piece, cites) in enumerate(pieces):
            if not cites:
                cites = next((later for _, later in pieces[k + 1 :] if later), [])
            text = _without_cites(piece)
            if cites and len(_WORD.findall(text)) >= 2:
                out.append(Claim(text, list(dict.fromkeys(cites)), number))
    return out


def content_terms(text: str) -> list[str]:
    """Content-word stems of ``text`` in order, without duplicates (stop words and one-letter words out)."""
    words = [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]
    return list(dict.fromkeys(stem(w) for w in words if not w.isdigit()))


def has_term(term: str, bag: set[str]) -> bool:
    """``term`` is in ``bag``, or one is a prefix of the other of at least three letters (the stemmer
    leaves "embed" as "emb" but "embedded" as "embed")."""
    if term in bag:
        return True
    if len(term) < 3:
        return False
    return any(len(b) >= 3 and (b.startswith(term) or term.startswith(b)) for b in bag)


def _numbers(text: str) -> set[str]:
    return {
        n.replace(",", ".").rstrip("0").rstrip(".") if "." in n or "," in n else n
        for n in _NUMBER.findall(text)
    }


def lexical_check(claim: str, span: str, label: str = "") -> tuple[bool, str]:
    """(supported?, why) by the rule in the module docstring."""
    terms = content_terms(claim)
    if not span.strip():
        return False, "the cited passage could not be read"
    if not terms:
        return True, "nothing to check: the claim has no content words"
    have = set(content_terms(f"{span} {label}"))
    found = [t for t in terms if has_term(t, have)]
    share = len(found) / len(terms)
    missing = sorted(_numbers(_blank_code(claim) + " " + claim) - _numbers(f"{span} {label}"))
    why = f"{len(found)}/{len(terms)} content words in the cited passage"
    if missing:
        return False, why + f"; number(s) {', '.join(missing)} not in it"
    if share < LEXICAL_SHARE:
        return False, why + f" (needs {LEXICAL_SHARE:.0%})"
    return True, why


def _section(note: Note, heading: str | None, block: str | None) -> str:
    body = note.body
    at = body.find(f"^{block}") if block else -1
    if at >= 0:  # the block: its paragraph (or list item) ends with the id
        start = max(body.rfind("\n\n", 0, at), 0)
        return body[start : at + len(block or "") + 1].strip()[-SPAN_CHARS:]
    if heading:
        wanted = heading.split("#")[-1].strip().casefold()
        for i, h in enumerate(note.headings):
            if h.text.strip().casefold() == wanted:
                later = [x for x in note.headings[i + 1 :] if x.level <= h.level]
                return body[h.offset : later[0].offset if later else len(body)][:SPAN_CHARS]
    return body[:SPAN_CHARS]


def span_texts(
    citations: list[str], context: list[dict[str, Any]], vaults: VaultSet | None
) -> dict[str, tuple[str, str]]:
    """citation as written -> (span text, label) for each citation: the context item given for it, else
    the cited section of the note as it is now ("" when it cannot be read)."""
    out: dict[str, tuple[str, str]] = {}
    names = _Aliases(vaults)
    for item in context:
        cite, text = item.get("citation"), item.get("text")
        if isinstance(cite, str) and isinstance(text, str):
            path = str(item.get("path") or "")
            label = f"{path} {item.get('heading') or ''}{names.of(item.get('vault'), path)}"
            old = out.get(cite, ("", label))[0]
            out[cite] = ((old + "\n\n" + text).strip(), label)
    todo = [c for c in dict.fromkeys(citations) if c not in out]
    if not todo or vaults is None:
        return out
    parsed = [c for raw in todo for c in extract_citations(raw)]
    for cite in resolve_citations(parsed, vaults):
        text = ""
        if cite.resolved and cite.vault is not None:
            try:
                note = vaults.get(cite.vault).read_note(cite.path)
                text = _section(note, cite.heading, cite.block)
            except Exception:  # unreadable now: the claim cannot be checked, so it is not supported
                text = ""
        out[cite.raw] = (text, f"{cite.path} {cite.heading or ''}{names.of(cite.vault, cite.path)}")
    return out


class _Aliases:
    """A cited note's aliases, as words of its label: a note aliased "DVI" is about DVI wherever its
    text says "Digital Visual Interface" only. Read once per note; "" when it has none or cannot be read."""

    def __init__(self, vaults: VaultSet | None) -> None:
        self.vaults = vaults
        self.seen: dict[tuple[str, str], str] = {}

    def of(self, vault: object, path: str) -> str:
        if self.vaults is None or not isinstance(vault, str) or not path:
            return ""
        key = (vault, path)
        if key not in self.seen:
            try:
                aliases = self.vaults.get(vault).read_note(path).frontmatter.get("aliases")
            except Exception:  # a vault or note gone since it was cited: no names to add
                aliases = None
            if isinstance(aliases, str):
                aliases = [aliases]
            words = (
                [a for a in aliases if isinstance(a, str) and a.strip()] if isinstance(aliases, list) else []
            )
            self.seen[key] = "".join(f" {a.strip()}" for a in words)
        return self.seen[key]


def check_lexically(claims: list[Claim], spans: dict[str, tuple[str, str]]) -> list[Verdict]:
    """One verdict per claim: supported when one of its citations' spans supports it."""
    verdicts = []
    for c in claims:
        reasons = []
        ok = False
        for raw in c.citations:
            span, label = spans.get(raw, ("", ""))
            ok, why = lexical_check(c.text, span, label)
            reasons.append(why)
            if ok:
                break
        verdicts.append(Verdict(c.text, c.citations, ok, reasons[-1] if reasons else "", "lexical", c.line))
    return verdicts


def judge_items(
    claims: list[Claim], spans: dict[str, tuple[str, str]], limit: int = 1500
) -> list[dict[str, Any]]:
    """The batched judge's input: one item per claim with the text of its first readable cited span."""
    items = []
    for k, c in enumerate(claims):
        source = next((spans[r][0] for r in c.citations if spans.get(r, ("", ""))[0]), "")
        items.append({"id": k, "claim": c.text, "citation": c.citations[0], "source": source[:limit]})
    return items


def parse_verdicts(data: Any, count: int) -> dict[int, tuple[bool, str]]:
    """The judge's reply (``{"verdicts": [{"id", "supported", "reason"}]}`` or the bare list) as
    id -> (supported, reason); malformed entries are left out (those claims get the lexical check)."""
    rows = data.get("verdicts") if isinstance(data, dict) else data
    out: dict[int, tuple[bool, str]] = {}
    for row in rows if isinstance(rows, list) else ():
        if not isinstance(row, dict):
            continue
        k, ok = row.get("id"), row.get("supported")
        if isinstance(k, int) and not isinstance(k, bool) and 0 <= k < count and isinstance(ok, bool):
            out[k] = (ok, str(row.get("reason") or "")[:300])
    return out


def flag_unsupported(answer: str, verdicts: list[Verdict]) -> str:
    """Mark each unsupported claim after its last citation on its line: ``[[X]] ⚠ unsupported``.
    Idempotent: a claim already marked is not marked twice."""
    lines = answer.split("\n")
    for v in verdicts:
        if v.supported or not v.citations or not 0 <= v.line < len(lines):
            continue
        line = lines[v.line]
        words = v.claim.split()
        start = line.find(words[0]) if words else 0
        last = v.citations[-1]
        at = line.find(last, max(start, 0))
        at = at if at >= 0 else line.find(last)
        if at < 0:
            continue
        end = at + len(last)
        if line[end:].lstrip().startswith(UNSUPPORTED_MARK):
            continue
        lines[v.line] = f"{line[:end]} {UNSUPPORTED_MARK}{line[end:]}"
    return "\n".join(lines)
