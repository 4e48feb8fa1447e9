"""What weak retrieval leaves out of coverage (issue 16: a run whose retrieval was weak for an ask names it).

A leaf whose retrieval stayed weak after the whole recovery ladder ends FAILED_WITH_DIAGNOSTIC and keeps
its best answer, flagged (``_exhausted``). Its passages are the closest the vault holds, not an answer, so
for the report's coverage (``_verify.check_body``):

- a claim citing a note that only weak retrievals found covers no ask (a note some node whose retrieval
  held also retrieved still counts);
- a word of an ask that a weak retrieval found in none of its passages, and that no other supported
  claim, citation or passage holds, leaves that ask uncovered, whatever its other words matched ("How
  long should roasted beans rest on the moons of Neptune?" is not answered by notes on resting beans).
  A subtask pruned as redundant after such a retrieval counts too (``retrieval["weak"]``): its sibling
  answered from the same passages, but its own ask, not the sibling's.
"""

from __future__ import annotations

from ..retrieval import citations as cite
from ..retrieval.coverage import Ask, CoverEvidence
from ..retrieval.support import content_terms, has_term
from .dag import Dag, Node, NodeStatus

__all__ = ["note_key", "unfound_terms", "weak_asks", "weak_notes", "weak_retrieval"]


def weak_retrieval(node: Node) -> bool:
    """Its retrieval stayed weak after the whole ladder (not code whose repairs ran out)."""
    return node.status is NodeStatus.FAILED_WITH_DIAGNOSTIC and node.diagnostic.get("kind") == "retrieval"


def note_key(citation: str) -> str:
    """The cited note of a wikilink as ``vault:path`` without ``.md``, case-folded."""
    found = cite.extract_citations(citation)
    if not found:
        return citation.casefold()
    return f"{found[0].vault or ''}:{found[0].path.removesuffix('.md')}".casefold()


def _context_notes(node: Node) -> set[str]:
    items = node.retrieval.get("context", [])
    return {note_key(str(c["citation"])) for c in items if isinstance(c, dict) and c.get("citation")}


def weak_notes(dag: Dag) -> set[str]:
    """The notes (``note_key``) that only weak retrievals found: no node whose retrieval held has them."""
    weak: set[str] = set()
    sound: set[str] = set()
    for n in dag:
        if weak_retrieval(n):
            weak |= _context_notes(n)
        elif n.status.ok:
            sound |= _context_notes(n)
    return weak - sound


def unfound_terms(dag: Dag) -> set[str]:
    """Content-word stems of the tasks of weak retrievals that none of their passages held."""
    out: set[str] = set()
    for n in dag:
        words: list[str] = []
        if weak_retrieval(n):
            words = n.diagnostic.get("failure_report", {}).get("missing_words", [])
        elif n.redundant and isinstance(n.retrieval.get("weak"), dict):
            words = n.retrieval["weak"].get("missing_words", [])
        out |= set(content_terms(" ".join(str(w) for w in words)))
    return out


def weak_asks(asks: list[Ask], dag: Dag, evidence: list[CoverEvidence]) -> list[Ask]:
    """The asks with a word a weak retrieval did not find and no supported ``evidence`` holds either."""
    unfound = unfound_terms(dag)
    if not unfound:
        return []
    held = {t for ev in evidence for t in content_terms(f"{ev.claim} {ev.where} {ev.passage}")}
    lacking = {t for t in unfound if not has_term(t, held)}
    return [a for a in asks if any(has_term(t, lacking) for t in a.terms)]
