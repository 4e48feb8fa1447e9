"""What a run may add to its vault, after the DAG, always for a person to review (C4, V8):

- ``--learn``: the root's cited answer is proposed as a learning (``status: staging`` in ``Shad/Staging/``);
  only a person promotes it (``shad learnings promote``);
- ``--garden``: the gardener proposes a ``type`` for the untyped notes the run read, through the approval
  queue (``shad approvals``), never straight into the vault; a note that changed on disk since the run read
  it stops the gardener with ``StateCorruptionError`` (a failure of the run, so the status says it), and
  nothing is asked for it.

Every note the run writes goes through the run's writer (``run_writer``), whose every write is a
``NOTE_WRITTEN`` event in the run's ``events.jsonl`` (path, role, bytes, sha256; never the text).
"""

from __future__ import annotations

import asyncio

from ..curation import propose_learning, propose_types
from ..errors import ShadError
from ..events import NoteWritten
from ..vault import NoteWrite, VaultWriter, is_local, location
from ._context import RunContext, failure

__all__ = ["garden", "learn", "run_writer"]


def run_writer(ctx: RunContext, vault_index: int, why: str) -> VaultWriter:
    """The run's writer of its ``vault_index``-th vault (a folder): root role, acting as the run. Its
    writes may happen on a worker thread; their events are emitted on the run's loop, in order."""
    vault = ctx.vaults.vaults[vault_index]
    loop = asyncio.get_running_loop()

    def written(write: NoteWrite, size: int) -> None:
        event = NoteWritten(
            vault=vault.id,
            path=write.path,
            action=write.action,
            why=why,
            role="root",
            bytes=size,
            hash=write.hash,
        )
        loop.call_soon_threadsafe(ctx.emit, event)

    return VaultWriter(vault.root, role="root", actor=ctx.run_id, on_write=written)


async def garden(ctx: RunContext) -> None:
    if not ctx.config.garden:
        return
    read: dict[str, dict[str, str]] = {}  # vault root -> {path: hash when read}
    for node in ctx.run.dag:
        for root, path, digest in (tuple(n) for n in node.retrieval.get("notes", [])):
            read.setdefault(str(root), {}).setdefault(str(path), str(digest))
    lines = ["## Gardener", ""]
    for vault in ctx.vaults.vaults:
        notes = read.get(location(vault), {})
        if not notes:
            continue
        if not is_local(vault):
            lines.append(f"- skipped {vault.id}: it is read through {location(vault)} and cannot be written")
            continue
        try:
            proposals = await asyncio.to_thread(propose_types, vault, notes.items(), ctx.run_id)
        except ShadError as exc:
            ctx.run.failures.append(failure("root", "garden", exc))
            lines.append(f"- stopped in {vault.id}: {exc.message}")
            continue
        for p in proposals:
            lines.append(
                f"- `{p.path}`: type **{p.type}** ({p.evidence}) — waits for a person: "
                f"`shad approvals approve {p.approval_id}`"
            )
        ctx.state.garden += [p.to_dict() for p in proposals]
    if len(lines) == 2:
        lines.append("No untyped note the run read has neighbours that agree on a type: nothing proposed.")
    ctx.state.garden_report = [*lines, ""]


async def learn(ctx: RunContext) -> None:
    if not ctx.config.learn:
        return
    dag = ctx.run.dag
    root = dag.root() if len(dag) else None
    if root is None or not root.status.ok or not root.answer.strip():
        ctx.state.learn_report = [
            "## Learning",
            "",
            "Nothing proposed: the run has no answer to learn from.",
            "",
        ]
        return
    sources = sorted(
        {
            f"[[{c['path'][:-3] if c['path'].endswith('.md') else c['path']}]]"
            for n in dag
            for c in n.citations
            if c.get("resolved")
        }
    )
    try:
        path = await asyncio.to_thread(
            propose_learning,
            run_writer(ctx, 0, "--learn proposal"),
            ctx.config.goal,
            root.answer,
            run_id=ctx.run_id,
            sources=sources,
        )
    except ShadError as exc:
        ctx.run.failures.append(failure("root", "learn", exc))
        return
    ctx.state.learning = path
    ctx.state.learn_report = [
        "## Learning",
        "",
        f"Proposed as `{path}` (status: staging). A person promotes it: `shad learnings promote {path}`.",
        "",
    ]
