"""Retrieval: what a leaf reads from the vaults, how good it is, and what a report may cite.

Direct search (``DirectSearchRetriever``) and Code Mode (``CodeModeRetriever``: model-written scripts in
the sandbox, with the recovery ladder), the retrieval score, citations (``citations``), the checks of
a synthesis (``synthesis``), of each claim against its cited passage (``support``) and of the goal's
asks against what the report found (``coverage``).
"""

from __future__ import annotations

from ._codemode import API_DESCRIPTION, CodeModeRetriever, RecoveryPolicy
from ._direct import (
    ENGINE_STEPS,
    REFERENTS,
    SECTION_CHARS,
    ContextItem,
    DirectSearchRetriever,
    RetrievalResult,
    Retriever,
    citation_link,
    merge_context,
    retrieval_score,
    section,
)
from ._findings import Findings

__all__ = [
    "API_DESCRIPTION",
    "ENGINE_STEPS",
    "REFERENTS",
    "SECTION_CHARS",
    "CodeModeRetriever",
    "ContextItem",
    "DirectSearchRetriever",
    "Findings",
    "RecoveryPolicy",
    "RetrievalResult",
    "Retriever",
    "citation_link",
    "merge_context",
    "retrieval_score",
    "section",
]
