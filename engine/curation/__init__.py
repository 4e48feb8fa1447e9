"""Curating the vault (issue 14): ingest sources as provenance-stamped snapshots with a shadow index
outside the vault, gap analysis from run histories, learnings a person promotes, and the approval queue
for deletes and publishing. Every write to a vault goes through ``engine.vault.VaultWriter``."""

from __future__ import annotations

from ._analyze import COLUMNS as GAP_COLUMNS
from ._analyze import GapReport, TopicGap, analyze_vault
from ._analyze_report import report_markdown as gap_report_markdown
from ._analyze_report import write_report as write_gap_report
from ._approvals import (
    APPROVAL_KINDS,
    APPROVAL_STATUSES,
    AlreadyDecidedError,
    Approval,
    ApprovalLogEntry,
    approval_log,
    approvals,
    approve,
    get_approval,
    pending_approvals,
    reject,
    request_delete,
    request_frontmatter,
    request_publish,
)
from ._audit import audit_log, audit_path, logged
from ._enrich import EnrichResult, enrich, enrich_folder
from ._garden import TypeProposal, infer_type, propose_types
from ._git import GitError
from ._ingest import ConsentRequired, IngestPlan, IngestResult, ingest, plan_ingest
from ._learnings import (
    LEARNING_STATUSES,
    LEARNINGS_FOLDER,
    STAGING_FOLDER,
    Learning,
    learnings,
    promote_learning,
    propose_learning,
    reject_learning,
)
from ._select import PRESETS as INGEST_PRESETS
from ._sources import POLICIES as SOURCE_POLICIES
from ._sources import ShadowIndex, SnapshotRecord, SourceRecord
from ._update import UpdateOutcome, update_sources

__all__ = [
    "APPROVAL_KINDS",
    "APPROVAL_STATUSES",
    "GAP_COLUMNS",
    "INGEST_PRESETS",
    "LEARNINGS_FOLDER",
    "LEARNING_STATUSES",
    "SOURCE_POLICIES",
    "STAGING_FOLDER",
    "AlreadyDecidedError",
    "Approval",
    "ApprovalLogEntry",
    "ConsentRequired",
    "EnrichResult",
    "GapReport",
    "GitError",
    "IngestPlan",
    "IngestResult",
    "Learning",
    "ShadowIndex",
    "SnapshotRecord",
    "SourceRecord",
    "TopicGap",
    "TypeProposal",
    "UpdateOutcome",
    "analyze_vault",
    "approval_log",
    "approvals",
    "approve",
    "audit_log",
    "audit_path",
    "enrich",
    "enrich_folder",
    "gap_report_markdown",
    "get_approval",
    "infer_type",
    "ingest",
    "learnings",
    "logged",
    "pending_approvals",
    "plan_ingest",
    "promote_learning",
    "propose_learning",
    "propose_types",
    "reject",
    "reject_learning",
    "request_delete",
    "request_frontmatter",
    "request_publish",
    "update_sources",
    "write_gap_report",
]
