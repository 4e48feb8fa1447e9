"""Code out of a run (issue 13): files from a model's reply or a vault note's code blocks, the manifest a
run builds (contracts first), spec-first test stubs, and what a failed check means for the repair loop.

Nothing here calls a model or reads the vault; ``engine.runs._software`` does, with these pieces.
"""

from __future__ import annotations

from ._blocks import CHANGE_REQUEST, FileBlock, blocks_from_notes, change_requests, file_blocks
from ._repair import (
    ERROR_CLASSES,
    MAX_ESCALATIONS,
    MAX_LOCAL_REPAIRS,
    Failure,
    RepairLedger,
    failures_of,
    signature,
)
from ._stubs import STUB_PLAN, STUB_TESTS, contract_stubs
from ._workspace import Workspace

__all__ = [
    "CHANGE_REQUEST",
    "ERROR_CLASSES",
    "MAX_ESCALATIONS",
    "MAX_LOCAL_REPAIRS",
    "STUB_PLAN",
    "STUB_TESTS",
    "Failure",
    "FileBlock",
    "RepairLedger",
    "Workspace",
    "blocks_from_notes",
    "change_requests",
    "contract_stubs",
    "failures_of",
    "file_blocks",
    "signature",
]
