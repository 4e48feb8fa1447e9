"""The payloads of a software run's events (issue 13): files produced, checks, repairs, writes."""

from __future__ import annotations

from dataclasses import dataclass

from ._base import Event, EventKind

__all__ = ["CodeProduced", "CodeRepaired", "ContractChangeRequested", "FilesWritten", "NodeChecked"]


# --- software runs (issue 13): the code manifest, its checks, repairs and writes -------------------------


@dataclass(frozen=True)
class CodeProduced(Event):
    """A node put files into the run's manifest. ``step``: contracts | implementation | tests | stubs |
    reconcile | vault (copied from the vault's notes, no model)."""

    KIND = EventKind.CODE_PRODUCED
    node: str
    step: str
    files: list[str]


@dataclass(frozen=True)
class NodeChecked(Event):
    """The checks of the files a node owns: ``status`` pass | fail | skip, ``checks`` name -> status."""

    KIND = EventKind.NODE_CHECKED
    node: str
    level: str
    status: str
    findings: int
    checks: dict[str, str]


@dataclass(frozen=True)
class CodeRepaired(Event):
    """One repair attempt: ``scope`` local | escalate; ``outcome`` fixed | still failing | repeated (the
    same error signature came back, so the loop stops) | refused (a cap or no model)."""

    KIND = EventKind.CODE_REPAIRED
    node: str
    attempt: int
    error_class: str
    scope: str
    signature: str
    outcome: str


@dataclass(frozen=True)
class ContractChangeRequested(Event):
    """A node needs a change in the contracts; the parent reconciles it."""

    KIND = EventKind.CONTRACT_CHANGE_REQUESTED
    node: str
    detail: str


@dataclass(frozen=True)
class FilesWritten(Event):
    """The manifest was written under ``output`` (``--write-files``)."""

    KIND = EventKind.FILES_WRITTEN
    output: str
    written: int
    skipped: int
    refused: int
