"""Human checkpoints: where a run stops to ask a person, and what the person decided.

Tier C of the retrieval recovery ladder (seed 000 §2.4.3): a leaf whose retrieval is still weak after a
regenerated script and a broadened direct search, and which is *high-impact* (security, data model,
architecture or contracts at depth <= 1, or a node several subtasks depend on), opens a checkpoint. The
person may approve the weak context, edit it (name the notes to use), give a hint for one more
retrieval round, skip the node, or stop the run.

What happens depends on the policy (``RunConfig.checkpoints``): ``ask`` awaits a decider (the terminal
prompt, a widget), ``pause`` lets the node wait in NEEDS_HUMAN while the rest of the run goes on (the
run ends NEEDS_HUMAN; ``decide`` then ``aresume`` continue it), ``approve`` and ``skip`` decide by
themselves, ``off`` opens none. At most ``MAX_PER_RUN`` checkpoints ask a person; later ones are
approved and listed for review at the end. Each checkpoint, with the retrieval it judged, is kept in
the run's history (``checkpoints/<node>.json``), so a resume never pays for that retrieval again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import CHECKPOINT_POLICIES as POLICIES
from ..errors import UsageError
from ..events import CheckpointDecided, to_record

if TYPE_CHECKING:
    from ..store.history import History
    from ..vault import VaultSet
    from .dag import Dag, Node

__all__ = [
    "ACTIONS",
    "MAX_PER_RUN",
    "POLICIES",
    "Checkpoint",
    "Decider",
    "Decision",
    "check_edit",
    "check_edit_for_run",
    "decide",
    "high_impact",
    "parse_note_list",
    "pending_checkpoints",
    "requested",
    "strip_markers",
]

ACTIONS = ("approve", "edit", "hint", "skip", "stop")
MAX_PER_RUN = 5
FOLDER = "checkpoints"
PREVIEW_CHARS = 600

# Seed 000 §2.9.1: security/auth, data model, architecture, contracts. Word-bounded stems, so that
# "author" is not "auth" and "interfaces" is "interface".
_IMPACT = {
    "security": r"secur\w*|auth|authn|authz|authenticat\w*|authori[sz]\w*|oauth\w*|permission\w*|"
    r"credential\w*|secrets?|passwords?|encrypt\w*|vulnerab\w*|access control",
    "data model": r"data ?models?|schemas?|migrations?|databases?",
    "architecture": r"architect\w*|design decisions?",
    "contracts": r"contracts?|apis?|interfaces?|protocols?|slas?",
}
_IMPACT_RE = {name: re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE) for name, pattern in _IMPACT.items()}
FAN_OUT = 2  # this many dependents make a node gating
# A person's request in a goal or a plan node: "[REVIEW]" or "[APPROVE]" (H1).
_MARKER = re.compile(r"\[(REVIEW|APPROVE)\]")


def strip_markers(text: str) -> str:
    """``text`` without its checkpoint markers (what retrieval searches for)."""
    return " ".join(_MARKER.sub(" ", text).split())


def requested(node: Node, dag: Dag, goal: str, stages: tuple[str, ...], primary: str | None) -> str | None:
    """Why a person asked to see ``node``'s evidence before it is answered, or None: a marker in its own
    task; a marker in the goal, for the root when it answers alone, else for the leaves of the strategy's
    primary stage (the evidence the answer rests on); or ``--checkpoint-on`` naming its stage."""
    own = _MARKER.search(node.task)
    if own and node.parent is not None and not _MARKER.search(goal):
        return f"the subtask asks for {own.group(0)}"
    asked = _MARKER.search(goal)
    if asked and not dag.children(node.id) and (node.parent is None or node.stage == primary):
        return f"the goal asks for {asked.group(0)}"
    if node.stage in stages:
        return f"--checkpoint-on {node.stage}"
    return None


def high_impact(node: Node, dag: Dag) -> str | None:
    """Why ``node`` is high-impact, or None: an impact category in its task at depth <= 1, or at least
    ``FAN_OUT`` subtasks that build on its evidence: those of its own stage that cannot start without
    it (the second steps of a question, which retrieve from what it found). A later stage of the
    strategy (gather after frame) retrieves on its own: a weak framing leaves its evidence as strong."""
    if node.depth <= 1:
        found = [name for name, rx in _IMPACT_RE.items() if rx.search(node.task)]
        if found:
            return f"{' and '.join(found)} at depth {node.depth}"
    dependents = [n.id for n in dag if node.id in n.hard_deps and n.stage == node.stage]
    if len(dependents) >= FAN_OUT:
        return f"{len(dependents)} subtasks depend on it ({', '.join(sorted(dependents)[:5])})"
    return None


@dataclass
class Decision:
    """What a person (``by="human"``), the policy (``"policy"``) or the per-run cap (``"cap"``) decided."""

    action: str
    text: str = ""  # the hint, or for edit the notes to use
    by: str = "human"
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Decision:
        return cls(
            str(data["action"]), str(data.get("text", "")), str(data.get("by", "human")), data.get("at", 0)
        )


@dataclass
class Checkpoint:
    """One question to a person about one node, with what they need to answer it."""

    run_id: str
    node_id: str
    kind: str  # "retrieval": tier C of the recovery ladder; "review": asked for; "conflict": sources disagree
    task: str
    reason: str  # why the engine cannot go on alone
    impact: str  # why this node matters
    signals: dict[str, Any] = field(default_factory=dict)
    context: list[dict[str, Any]] = field(default_factory=list)  # what retrieval found (previews)
    queries: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=lambda: list(ACTIONS))
    created: float = field(default_factory=time.time)
    decision: Decision | None = None

    @property
    def pending(self) -> bool:
        return self.decision is None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["decision"] = self.decision.to_dict() if self.decision else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        decision = known.pop("decision", None)
        return cls(**known, decision=Decision.from_dict(decision) if decision else None)

    def commands(self) -> list[str]:
        """The CLI commands that answer it (those of its options)."""
        base = f"shad checkpoint {self.run_id} {self.node_id}"
        flags = {
            "approve": "--approve",
            "hint": '--hint "..."',
            "edit": '--edit "Folder/Note"',
            "skip": "--skip",
            "stop": "--stop",
        }
        return [f"{base} {flags[a]}" for a in ACTIONS if a in self.options]


# Answers a checkpoint under the "ask" policy (the terminal prompt, a widget); None leaves the node waiting.
Decider = Callable[[Checkpoint], Awaitable[Decision | None]]


def preview(context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = ("vault", "path", "heading", "citation")
    return [{**{k: c.get(k) for k in keys}, "text": str(c.get("text", ""))[:PREVIEW_CHARS]} for c in context]


# --- the history side ------------------------------------------------------------------------------


def _rel(node_id: str, kind: str = "") -> str:
    """A node's checkpoint file; a conflict checkpoint (the root's answer) has its own beside it."""
    return f"{FOLDER}/{node_id}{'.conflict' if kind == 'conflict' else ''}.json"


def save(history: History, checkpoint: Checkpoint, retrieval: dict[str, Any] | None = None) -> None:
    """Write the checkpoint; the retrieval it judged is kept beside it (written once, never lost)."""
    rel = _rel(checkpoint.node_id, checkpoint.kind)
    if retrieval is None and (history.dir / rel).exists():
        retrieval = history.read_json(rel).get("retrieval")
    history.write_json(rel, {**checkpoint.to_dict(), "retrieval": retrieval})


def load(history: History, node_id: str, kind: str = "") -> tuple[Checkpoint, dict[str, Any] | None] | None:
    """The checkpoint of ``node_id`` (its ``conflict`` one with that ``kind``) and the retrieval it
    judged, or None."""
    rel = _rel(node_id, kind)
    if not (history.dir / rel).exists():
        return None
    data = history.read_json(rel)
    return Checkpoint.from_dict(data), data.get("retrieval")


def load_all(history: History) -> list[Checkpoint]:
    folder = history.dir / FOLDER
    if not folder.is_dir():
        return []
    found = [
        load(history, p.stem.removesuffix(".conflict"), "conflict" if p.stem.endswith(".conflict") else "")
        for p in sorted(folder.glob("*.json"))
    ]
    return sorted((c for c, _ in filter(None, found)), key=lambda c: c.created)


def pending_checkpoints(run_id: str) -> list[Checkpoint]:
    """The checkpoints of run ``run_id`` that still wait for a decision."""
    from ..store.history import find_run

    return [c for c in load_all(find_run(run_id)) if c.pending]


def parse_note_list(text: str) -> list[str]:
    """``[[A/B]], C/D.md`` or one per line -> ``["[[A/B]]", "[[C/D]]"]`` (wikilinks the resolver reads)."""
    items = [s.strip() for s in re.split(r"[\n,]", text) if s.strip()]
    links = []
    for item in items:
        inner = item[2:-2] if item.startswith("[[") and item.endswith("]]") else item
        inner = re.sub(r"\.md(?=$|#)", "", inner.strip())
        links.append(f"[[{inner}]]")
    return links


def check_edit(text: str, vaults: VaultSet) -> list[Any]:
    """Resolve the notes an edit names; a name that is no note of the vaults is a usage error."""
    from ..retrieval import citations as cite

    links = parse_note_list(text)
    if not links:
        raise UsageError(
            "edit names no notes", hint='name the notes to use, e.g. --edit "Folder/Note, Other"'
        )
    resolved = cite.resolve_citations(cite.extract_citations(" ".join(links)), vaults)
    missing = [f"{r.raw} ({r.reason})" for r in resolved if not r.resolved]
    if missing:
        raise UsageError(
            f"edit names notes the vaults do not have: {'; '.join(missing)}",
            hint="give vault-relative paths or wikilinks, e.g. Folder/Note",
        )
    return resolved


def decide(run_id: str, node_id: str | None, action: str, text: str = "") -> Checkpoint:
    """Record a person's decision on a pending checkpoint of run ``run_id``; ``node_id`` may be None
    when exactly one is pending. Does not resume the run: ``aresume`` (or ``shad checkpoint``) does."""
    from ..store.history import find_run

    action = action.strip().lower()
    if action not in ACTIONS:
        raise UsageError(f"unknown checkpoint action {action!r}", hint=f"actions: {', '.join(ACTIONS)}")
    history = find_run(run_id)
    pending = [c for c in load_all(history) if c.pending]
    if node_id is None:
        if len(pending) != 1:
            names = ", ".join(c.node_id for c in pending) or "none"
            raise UsageError(
                f"run {run_id} has {len(pending)} pending checkpoints: name the node",
                hint=f"pending: {names}",
            )
        node_id = pending[0].node_id
    found = load(history, node_id)
    if found is None or not found[0].pending:  # the node's conflict checkpoint, if that one waits
        found = load(history, node_id, "conflict") or found
    if found is None or not found[0].pending:
        names = ", ".join(c.node_id for c in pending) or "none"
        state = "already decided" if found is not None else "not waiting for a decision"
        raise UsageError(f"node {node_id!r} of run {run_id} is {state}", hint=f"pending: {names}")
    checkpoint = found[0]
    if action not in checkpoint.options:
        raise UsageError(
            f"a {checkpoint.kind} checkpoint cannot be answered with {action!r}",
            hint=f"answer with one of: {', '.join(checkpoint.options)}",
        )
    text = text.strip()
    if action == "hint" and not text:
        raise UsageError("a hint needs its text", hint='e.g. --hint "look in the Roasting notes"')
    if action == "edit":
        check_edit_for_run(run_id, text)
    checkpoint.decision = Decision(action, text, "human")
    save(history, checkpoint)
    decided = CheckpointDecided(node=node_id, action=action, by="human", text=text)
    history.append("events.jsonl", to_record(decided, checkpoint.run_id))
    return checkpoint


def check_edit_for_run(run_id: str, text: str) -> None:
    """``check_edit`` against the vaults of run ``run_id``."""
    from ..vault import VaultSet as _VaultSet
    from ._run import Run

    config = Run.load(run_id).config
    if config is None:
        raise UsageError(f"run {run_id}'s vaults are no longer where they were", hint="move them back")
    vaults = _VaultSet(list(config.vaults), include_history=config.include_history)
    for v in vaults:
        v.refresh()
    check_edit(text, vaults)
