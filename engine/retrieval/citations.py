"""Citations (E9): find the wikilinks a model wrote, resolve each against the vaults, flag what fails.

Answers cite full-path wikilinks: ``[[Folder/Note#Heading]]``, ``[[Folder/Note#^block]]``, with an
optional ``|alias``, and ``[[vault:Folder/Note#Heading]]`` when a run uses several vaults. Resolution
follows Obsidian's rules (exact path first, then a unique name or alias, via ``Vault.resolve_link``);
a heading must be one of the note's headings (compared the way Obsidian links compare them: case,
spacing and the characters a link cannot hold are ignored; ``#A#B`` names nested headings, each must
exist); a block id must be one of the note's ``^ids``. An unresolvable citation is never silently kept:
``flag_unresolved`` marks it in the text and ``summarize`` lists it for ``final.summary.json``.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from typing import Any

from ..vault import Note, Vault, VaultSet, is_local

__all__ = [
    "UNRESOLVED_MARK",
    "Citation",
    "ResolvedCitation",
    "extract_citations",
    "flag_unresolved",
    "make_citation",
    "resolve_citations",
    "summarize",
]

UNRESOLVED_MARK = "⚠ unresolved"
_LINK = re.compile(r"(!?)\[\[([^\[\]\n]{1,500}?)\]\]")
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_VAULT_PREFIX = re.compile(r"^([A-Za-z0-9][\w.-]{0,63}):(?![/\\])(.+)$")
_INNER_LINK = re.compile(r"\[\[([^\[\]|]*)(?:\|([^\[\]]*))?\]\]")
_HEADING_JUNK = re.compile(r"[#|^:\[\]%\\*_`]+")


@dataclass(frozen=True)
class Citation:
    """One wikilink as written: ``path`` is the target without ``.md``; ``vault`` the ``vault:`` prefix."""

    raw: str
    path: str
    vault: str | None = None
    heading: str | None = None
    block: str | None = None
    alias: str | None = None


@dataclass
class ResolvedCitation:
    """A citation checked against the vaults. ``path`` is vault-relative with ``.md`` (as written, plus
    ``.md``, when the note is missing); ``reason`` starts with note missing / heading missing /
    block missing / unknown vault (empty when resolved)."""

    raw: str
    vault: str | None
    path: str
    heading: str | None
    block: str | None
    resolved: bool
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _parse(raw: str, inner: str) -> Citation | None:
    target, _, alias = inner.partition("|")
    target = target.rstrip("\\").strip()  # "[[A\|b]]" inside a Markdown table escapes the pipe
    vault = None
    m = _VAULT_PREFIX.match(target)
    if m and "/" not in m.group(1):
        vault, target = m.group(1), m.group(2)
    path, _, anchor = target.partition("#")
    path = path.strip().replace("\\", "/").lstrip("/")
    if path.lower().endswith(".md"):
        path = path[:-3]
    heading = block = None
    anchor = anchor.strip()
    if anchor.startswith("^"):
        block = anchor[1:].strip() or None
    elif anchor:
        heading = anchor
    if not path and not heading and not block:
        return None
    return Citation(raw, path, vault, heading, block, alias.strip() or None)


def extract_citations(text: str) -> list[Citation]:
    """Every distinct wikilink in ``text`` (first occurrence order); embeds (``![[...]]``) and links
    inside code are not citations."""
    if not isinstance(text, str) or "[[" not in text:
        return []
    blanked = _CODE.sub(lambda m: " " * len(m.group(0)), _FENCE.sub(lambda m: " " * len(m.group(0)), text))
    out: list[Citation] = []
    seen: set[str] = set()
    for m in _LINK.finditer(blanked):
        if m.group(1):
            continue
        raw = text[m.start() : m.end()]
        if raw in seen:
            continue
        seen.add(raw)
        cite = _parse(raw, text[m.start(2) : m.end(2)])
        if cite is not None:
            out.append(cite)
    return out


def _clean_heading(heading: str) -> str:
    """A heading as a link may carry it: a wikilink inside shows its label, and ``[ ] | # ^`` (which
    Obsidian refuses in link targets) become spaces."""
    heading = _INNER_LINK.sub(lambda m: m.group(2) or m.group(1), heading)
    return " ".join(re.sub(r"[\[\]|#^]", " ", heading).split())


def make_citation(
    vault_id: str, path: str, heading: str | None = None, multi_vault: bool = False, block: str | None = None
) -> str:
    """``[[Folder/Note#Heading]]`` (or ``#^block``): the vault-relative path without ``.md``; the
    ``vault:`` prefix only when several vaults are in use."""
    target = path.replace("\\", "/").lstrip("/")
    if target.lower().endswith(".md"):
        target = target[:-3]
    if block:
        target += "#^" + block.lstrip("^")
    elif heading:
        target += "#" + _clean_heading(heading)
    return f"[[{vault_id}:{target}]]" if multi_vault else f"[[{target}]]"


def _norm_heading(text: str) -> str:
    return " ".join(_HEADING_JUNK.sub(" ", text).split()).casefold()


def _heading_forms(text: str) -> set[str]:
    """A heading compared the ways a link may spell it: with inner wikilinks shown as their label, or
    with only the brackets dropped."""
    return {_norm_heading(_INNER_LINK.sub(lambda m: m.group(2) or m.group(1), text)), _norm_heading(text)}


def _check_anchor(note: Note, cite: Citation) -> str:
    """'' when the heading / block exists in ``note``, else the reason."""
    if cite.block:
        if cite.block in note.blocks or cite.block.lower() in {b.lower() for b in note.blocks}:
            return ""
        return f"block missing: no ^{cite.block} in {note.path}"
    if cite.heading:
        headings = [_heading_forms(h.text) for h in note.headings]
        at = 0
        for part in (p for p in cite.heading.split("#") if p.strip()):
            want = _norm_heading(part)
            found = next((k for k in range(at, len(headings)) if want in headings[k]), None)
            if found is None:
                return f"heading missing: no heading {part.strip()!r} in {note.path}"
            at = found + 1
    return ""


# Notes read to check anchors, by (vault folder, path), with the file's stat when read: every node of a run
# cites the same few notes, and reading one (parse and link lookups) costs about a millisecond.
_READ: dict[tuple[str, str], tuple[tuple[int, int, int, int], Note]] = {}
_READ_MAX = 512


def _stamp(root: str, path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(os.path.join(root, path))
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


class _Resolver:
    def __init__(self, vaults: VaultSet) -> None:
        self.vaults = vaults
        self.notes: dict[tuple[str, str], Note | None] = {}

    def note(self, vault: Vault, path: str) -> Note | None:
        key = (vault.id, path)
        if key not in self.notes:
            self.notes[key] = self._read(vault, path)
        return self.notes[key]

    @staticmethod
    def _read(vault: Vault, path: str) -> Note | None:
        root = str(vault.root) if is_local(vault) else ""
        stamp = _stamp(root, path) if root else None
        if stamp is not None:
            seen = _READ.get((root, path))
            if seen is not None and seen[0] == stamp:
                return seen[1]  # only its headings and blocks are read here: shared, never handed out
        try:
            note = vault.read_note(path)
        except Exception:  # deleted since indexing, unreadable: the citation fails
            return None
        if stamp is not None:
            if len(_READ) >= _READ_MAX:
                _READ.clear()
            _READ[(root, path)] = (stamp, note)
        return note

    def one(self, cite: Citation) -> ResolvedCitation:
        candidates = list(self.vaults)
        path = cite.path
        if cite.vault is not None:
            if cite.vault in self.vaults.ids:
                candidates = [self.vaults.get(cite.vault)]
            elif not self._find(candidates, f"{cite.vault}:{cite.path}"):  # a colon in a note's name
                known = ", ".join(self.vaults.ids)
                return self._fail(cite, cite.vault, f"unknown vault: {cite.vault!r} (vaults: {known})")
            else:
                path = f"{cite.vault}:{cite.path}"
        if not path:
            return self._fail(cite, cite.vault, "note missing: the link names no note")
        first_failure: ResolvedCitation | None = None
        for vault in candidates:
            try:
                found = vault.resolve_link(path)
            except Exception as exc:  # an unreadable index fails this citation only
                first_failure = first_failure or self._fail(
                    cite, vault.id, f"note missing: vault error ({exc})"
                )
                continue
            if found is None:
                continue
            note = self.note(vault, found)
            reason = f"note missing: {found} cannot be read" if note is None else _check_anchor(note, cite)
            result = ResolvedCitation(cite.raw, vault.id, found, cite.heading, cite.block, not reason, reason)
            if not reason:
                return result
            first_failure = first_failure or result
        if first_failure is not None:
            return first_failure
        vault_id = cite.vault if cite.vault in self.vaults.ids else None
        where = f"vault {vault_id!r}" if vault_id else "any vault"
        return self._fail(cite, vault_id, f"note missing: no note {path!r} in {where}", path)

    def _find(self, vaults: list[Vault], path: str) -> bool:
        for v in vaults:
            try:
                if v.resolve_link(path):
                    return True
            except Exception:  # treated as not found
                continue
        return False

    @staticmethod
    def _fail(cite: Citation, vault: str | None, reason: str, path: str | None = None) -> ResolvedCitation:
        rel = path if path is not None else cite.path
        rel = rel + ".md" if rel and not rel.lower().endswith(".md") else rel
        return ResolvedCitation(cite.raw, vault, rel, cite.heading, cite.block, False, reason)


def resolve_citations(citations: list[Citation], vaults: VaultSet) -> list[ResolvedCitation]:
    """Check every citation against the vaults (in priority order; a ``vault:`` prefix picks one).
    Never raises: a failure is an unresolved citation with its reason."""
    resolver = _Resolver(vaults)
    return [resolver.one(c) for c in citations]


def summarize(resolved: list[ResolvedCitation]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(every distinct citation as ``{vault, path, heading, block, resolved}``, the unresolved ones as
    ``{raw, vault, path, heading, block, reason}``) for ``final.summary.json``."""
    citations: list[dict[str, Any]] = []
    unresolved: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for r in resolved:
        key = (r.vault, r.path, r.heading, r.block, r.resolved)
        if key not in seen:
            seen.add(key)
            citations.append({"vault": r.vault, "path": r.path, "heading": r.heading, "block": r.block,
                              "resolved": r.resolved})  # fmt: skip
        if not r.resolved and r.raw not in {u["raw"] for u in unresolved}:
            unresolved.append({"raw": r.raw, "vault": r.vault, "path": r.path, "heading": r.heading,
                               "block": r.block, "reason": r.reason})  # fmt: skip
    return citations, unresolved


def flag_unresolved(report_text: str, resolved: list[ResolvedCitation]) -> str:
    """Mark every occurrence of each unresolved citation: ``[[X#Y]] ⚠ unresolved (heading missing)``.
    Idempotent: a citation already marked is not marked twice."""
    text = report_text
    done: set[str] = set()
    for r in resolved:
        if r.resolved or r.raw in done:
            continue
        done.add(r.raw)
        kind = r.reason.split(":", 1)[0] or "unresolved"
        pattern = re.compile(re.escape(r.raw) + r"(?! " + re.escape(UNRESOLVED_MARK) + ")")
        text = pattern.sub(f"{_escape_repl(r.raw)} {UNRESOLVED_MARK} ({_escape_repl(kind)})", text)
    return text


def _escape_repl(text: str) -> str:
    return text.replace("\\", "\\\\")
