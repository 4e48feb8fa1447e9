"""The end of a run: its status, the cited report (a vault note), ``final.summary.json`` and the rest of
the history (``dag.json``, metrics, the replay manifest), all written atomically."""

from __future__ import annotations

import datetime as dt
import re
import shlex
import time
from typing import Any

import yaml

from ..events import RunFinished
from ..retrieval import citations as cite
from ..strategies import split_clauses
from ..text import points_back, section_heading
from . import _exhausted as exhausted
from . import checkpoints as cp
from ._context import RunContext
from ._resume_plan import cover_cut
from ._run import Run, RunStatus
from ._verify import BodyChecks, check_body
from .budget import overspend, overspend_lines
from .dag import NodeStatus

__all__ = ["finish_run", "render_report", "resume_command"]


def resume_command(run: Run, stop_reason: str | None = None, tokens: int = 0) -> str:
    """The exact command that continues the run. When the token budget stopped it, the command adds
    enough for what is left: the tokens a finished node took on average, times the nodes still to run
    (and the root's synthesis), with half again as margin, rounded up to thousands."""
    if run.status is RunStatus.NEEDS_HUMAN:
        return f"shad checkpoint {run.id}"  # lists what waits; deciding resumes the run
    # Subtasks the limits cut from the plan: the limits that make room for all of them.
    limits = "".join(
        f" --{name.replace('_', '-')} {value}"
        for name, value in cover_cut(run.dag, run.config.budgets).items()
    )
    if not (stop_reason and "token budget" in stop_reason):
        return f"shad resume {run.id}{limits}"
    done = [n for n in run.dag if n.status.ok and n.tokens]
    todo = sum(1 for n in run.dag if not (n.status.ok or n.redundant)) + 1
    per_node = (sum(n.tokens for n in done) / len(done)) if done else max(tokens, 1000)
    extra = max(1000, int(per_node * todo * 1.5))
    return f"shad resume {run.id} --budget +{-(-extra // 1000) * 1000}{limits}"


def _status(run: Run) -> RunStatus:
    nodes = list(run.dag)
    if not nodes:
        return RunStatus.FAILED
    if any(n.status is NodeStatus.NEEDS_HUMAN for n in nodes):
        return RunStatus.NEEDS_HUMAN
    root = run.dag.root()
    others_ok = all(n.status.ok or n.redundant for n in nodes if n.id != root.id)
    if exhausted.usable(root):  # a root whose retries ran out still answers: flagged, PARTIAL at best
        return RunStatus.SUCCESS if root.status.ok and others_ok and not run.failures else RunStatus.PARTIAL
    if any(exhausted.usable(n) and n.answer for n in nodes):
        return RunStatus.PARTIAL  # the root could not synthesize, but subtasks found things
    return RunStatus.FAILED


def _missing_branches(run: Run) -> list[dict[str, Any]]:
    return [
        {
            "node_id": n.id,
            "task": n.task,
            "status": n.status.value,
            "reason": n.note or (n.error or {}).get("message", ""),
            **({"limit": n.cut} if n.cut else {}),  # left out of the plan by this limit
        }
        for n in run.dag
        if not n.status.ok
        and n.status is not NodeStatus.FAILED_WITH_DIAGNOSTIC  # those: their own section
        and not n.redundant  # its siblings answered from the same passages: nothing is missing
    ]


def _redundant(run: Run) -> list[dict[str, Any]]:
    """Subtasks pruned by novelty, each with the nodes holding its passages and the tokens it saved (an
    estimate: what the holders' own answers cost, on average)."""
    out = []
    for n in run.dag:
        if not n.redundant:
            continue
        holders = [run.dag.node(h) for h in n.redundant_with if h in run.dag]
        spent = [h.tokens for h in holders if h.tokens]
        saved = round(sum(spent) / len(spent)) if spent else 0
        out.append({"node_id": n.id, "task": n.task, "same_as": n.redundant_with, "tokens_saved_est": saved})
    return out


def _body(run: Run) -> str:
    """The root's answer; if the root has none, what its subtasks found, each under its task."""
    root = run.dag.root() if len(run.dag) else None
    if root is not None and exhausted.usable(root) and root.answer:
        return root.answer
    found = [n for n in run.dag if exhausted.usable(n) and n.answer and n is not root]
    if not found:
        if any(n.status is NodeStatus.NEEDS_HUMAN for n in run.dag):
            return "The run waits for a person before it can answer; see Checkpoints below."
        if run.failures:
            return "The run produced no answer; see Failures below."
        return "The run produced no answer; see Missing branches below."
    goal = run.config.goal if run.config is not None else ""
    return "\n\n".join(f"### {section_heading(n.task, goal, n.id)}\n\n{n.answer}" for n in found)


def render_report(
    run: Run,
    body: str,
    unresolved: list[dict[str, Any]],
    missing: list[dict[str, Any]],
    tokens: int,
    seconds: float,
    stop_reason: str | None = None,
    checkpoints: list[cp.Checkpoint] | None = None,
    conflict_copies: list[dict[str, Any]] | None = None,
    checks: BodyChecks | None = None,
) -> str:
    front = {
        "type": "report",
        "run_id": run.id,
        "status": run.status.value,
        "goal": run.config.goal,
        "strategy": run.strategy,
        "provider": run.provider_name,
        "tokens": tokens,
        "wall_time_s": round(seconds, 2),
        "created": dt.datetime.fromtimestamp(run.started_at).isoformat(timespec="seconds"),
        "tags": ["shad/report"],
    }
    parts = [
        "---",
        yaml.safe_dump(front, sort_keys=False, allow_unicode=True).strip(),
        "---",
        "",
        f"# {run.config.goal}",
        "",
        body.strip(),
        "",
    ]
    if run.provider_name == "offline":
        parts += [
            # A callout's first line is its title (Obsidian, and the notebook's report boxes).
            "> [!note] Offline answer",
            "> Written by Shad's offline provider: no language model was used. The answer is extracted from",
            "> the vault passages it cites.",
        ]
        if run.config is not None and run.config.offline:
            parts.append("> Offline mode (--offline or SHAD_OFFLINE=1): nothing left the machine.")
        parts.append("")
    parts += _checkpoint_lines(checkpoints or [])
    parts += exhausted.report_lines(run)  # nodes whose retries ran out: what was tried, what to try
    if unresolved:
        parts += ["## Unresolved citations", ""]
        parts += [f"- `{u['raw']}` ({u['reason']})" for u in unresolved]
        parts.append("")
    if missing:
        parts += ["## Missing branches", ""]
        parts += [f"- `{m['node_id']}` {m['task']} — {m['status']}: {m['reason']}" for m in missing]
        parts.append("")
    redundant = _redundant(run)
    if redundant:  # E10: said, so a subtask that never answered is not mistaken for a lost one
        parts += ["## Pruned subtasks", ""]
        parts += [
            f"- pruned as redundant: `{r['node_id']}` {r['task']} (same passages as "
            f"{', '.join(f'`{h}`' for h in r['same_as'])}; no model call made)"
            for r in redundant
        ]
        parts.append("")
    if any(f.get("status") != NodeStatus.FAILED_WITH_DIAGNOSTIC.value for f in run.failures):
        parts += ["## Failures", ""]
        for f in run.failures:
            if f.get("status") == NodeStatus.FAILED_WITH_DIAGNOSTIC.value:
                continue  # said in "What failed and what to try"
            parts += [f"### `{f['node_id']}` — {f['phase']}: {f['error_class']}", "", f["message"], ""]
            if f.get("trace"):
                parts += ["```text", f["trace"].rstrip(), "```", ""]
    if conflict_copies:
        parts += [
            "## Diagnostics",
            "",
            "Sync-conflict copies, left out of retrieval (merge or delete them):",
            "",
        ]
        for c in conflict_copies:
            copy_of = f" — a copy of `{c['original']}`" if c.get("original") else ""
            parts.append(f"- `{c['path']}` in {c['vault']}{copy_of}")
        parts.append("")
    parts += _check_lines(run, checks)
    if run.status is not RunStatus.SUCCESS:
        command = _next(run, checks, stop_reason, tokens)
        lead = "To continue this run" if command.startswith(("shad resume", "shad checkpoint")) else "Next"
        parts += [f"{lead}: `{command}`", ""]
    return "\n".join(parts)


_WORDS = re.compile(r"\w+")


def _next_search(run: Run, checks: BodyChecks) -> str | None:
    """For asks the vault did not answer: a run on just those asks (the goal's other words left out), or,
    when the goal was that one ask, a search to look through the vault by hand. An ask that points back
    ("what theme did *that developer* make?") keeps the clause before it, which says what it means."""
    if not checks.uncovered:
        return None
    vaults = " ".join(f"--vault {shlex.quote(v)}" for v in run.config.vaults)
    clauses = [" ".join(c.split()) for c, _ in split_clauses(run.config.goal)]
    queries = []
    for ask in checks.uncovered:
        query = " ".join(ask.query.split())
        at = clauses.index(query) if query in clauses else -1
        queries.append(f"{clauses[at - 1]} {query}" if at > 0 and points_back(query) else query)
    goal = _WORDS.findall(run.config.goal.lower())
    focused = [q for q in queries if _WORDS.findall(q.lower()) != goal]
    if focused:
        return f"shad run {shlex.quote('; '.join(focused))} {vaults}"
    return f"shad vault search {shlex.quote(queries[0])} {vaults}"


def _next(run: Run, checks: BodyChecks | None, stop_reason: str | None, tokens: int = 0) -> str:
    """The command a report ends with: the resume command, or (when only uncovered asks made the run
    PARTIAL: nothing is left to resume) the one that looks for what the vault did not answer."""
    found = _next_search(run, checks) if checks is not None else None
    cut = _missing_branches(run) or run.failures or stop_reason
    if found and not cut and run.status is RunStatus.PARTIAL:
        return found
    return resume_command(run, stop_reason, tokens)


def _check_lines(run: Run, checks: BodyChecks | None) -> list[str]:
    """The asks no cited passage answers, and the claims their passages do not support."""
    if checks is None:
        return []
    lines: list[str] = []
    if checks.uncovered:
        unfinished = any(
            not (n.status.ok or n.redundant or n.status is NodeStatus.FAILED_WITH_DIAGNOSTIC) for n in run.dag
        )
        label = "Not answered yet (the run did not finish):" if unfinished else "Not found in the vault:"
        lines += ["## Coverage", "", label, ""]
        lines += [f"- {a.text}" for a in checks.uncovered]
        lines.append("")
    if checks.unsupported:
        lines += [
            "## Unsupported claims",
            "",
            f"Their cited passages do not say so (checked: {checks.method}):",
            "",
        ]
        lines += [f"- “{v.claim[:200]}” {' '.join(v.citations)} — {v.reason}" for v in checks.unsupported]
        lines.append("")
    return lines


def _checkpoint_lines(checkpoints: list[cp.Checkpoint]) -> list[str]:
    """Waiting checkpoints with the commands that answer them; decided ones with their decision, those
    the per-run cap approved unasked marked for review."""
    if not checkpoints:
        return []
    lines = ["## Checkpoints", ""]
    for c in checkpoints:
        head = f"- `{c.node_id}` {c.task[:120]} — {c.reason}; high-impact: {c.impact}."
        if c.decision is None:
            lines += [head + " **Waits for a person.** Decide with one of:"]
            lines += [f"  - `{command}`" for command in c.commands()]
        elif c.decision.by == "cap":
            lines += [head + f" Approved without asking (over {cp.MAX_PER_RUN} per run): **review it**."]
        else:
            text = f" ({c.decision.text[:120]})" if c.decision.text else ""
            lines += [head + f" Decided: {c.decision.action}{text} by {c.decision.by}."]
    return [*lines, ""]


def finish_run(ctx: RunContext, tokens: int) -> None:
    """The run's end: settle its status, write the cited report, the summary and the rest of the history.
    ``tokens`` is what the run spent in all its sessions."""
    run, state = ctx.run, ctx.state
    waiting = [n.id for n in run.dag if n.status is NodeStatus.NEEDS_HUMAN]
    for node in run.dag:
        if node.status is NodeStatus.CREATED and waiting and not state.stop_reason:
            node.note = f"waits for the checkpoint of {', '.join(waiting)}"  # it runs once decided
        elif not node.status.finished and node.status is not NodeStatus.NEEDS_HUMAN:
            # Started but never finished: the run stopped around it (said, so a live tree shows why).
            ctx.prune(node, state.stop_reason or "not finished")
    run.failures += exhausted.failure_entries(run)
    run.status = _status(run)
    if run.status is RunStatus.FAILED and (state.stop_reason or state.skipped_by_human):
        # A budget, the clock or a person stopped it: resumable, not broken.
        run.status = RunStatus.PARTIAL
    run.finished_at = time.time()
    seconds = run.finished_at - run.started_at
    body = _body(run)
    root = run.dag.root() if len(run.dag) else None
    checks = check_body(ctx, body, root)  # support, coverage: an ask the vault does not answer is said so
    body = checks.body
    if run.status is RunStatus.SUCCESS and checks.uncovered:
        run.status = RunStatus.PARTIAL
    run.status = exhausted.run_status(run, run.status)  # H4: --on-exhausted partial | fail
    if state.software_report:  # the files cite their notes: those citations are checked like any other
        body = body.rstrip() + "\n\n" + "\n".join(state.software_report)
    for section in (state.garden_report, state.learn_report):
        if section:
            body = body.rstrip() + "\n\n" + "\n".join(section)
    over = overspend(tokens, run.config.budgets.max_tokens, state.overruns)
    if over is not None:  # past its budget: the status stays what the answer is, but never silently
        body = body.rstrip() + "\n\n" + "\n".join(overspend_lines(over))
    resolved = cite.resolve_citations(cite.extract_citations(body), ctx.vaults)
    citations, _ = cite.summarize(resolved)
    unresolved = [
        {"raw": r.raw, "vault": r.vault, "path": r.path, "heading": r.heading, "reason": r.reason}
        for r in resolved
        if not r.resolved
    ]
    if unresolved:
        body = cite.flag_unresolved(body, resolved)
    missing = _missing_branches(run)
    redundant = _redundant(run)
    checkpoints = cp.load_all(run.history)
    conflict_copies = ctx.vaults.conflict_copies()
    run.report = render_report(
        run,
        body,
        unresolved,
        missing,
        tokens,
        seconds,
        state.stop_reason,
        checkpoints,
        conflict_copies,
        checks,
    )
    ran = (NodeStatus.SUCCEEDED, NodeStatus.FAILED, NodeStatus.FAILED_WITH_DIAGNOSTIC)
    executed = [n for n in run.dag if n.status in ran]
    metrics = {
        "total_tokens": tokens,
        "llm_calls": run.llm_calls,
        "nodes_total": len(run.dag),
        "nodes_executed": len(executed),
        "cache_hits": ctx.cache.hits,
        "cache_misses": ctx.cache.misses,
        "stale_nodes": state.stale_nodes + ctx.cache.stale,
        "reexecuted_nodes": state.reexecuted,
        "duration_ms": round(seconds * 1000, 1),
        "cost_usd": round(state.cost_usd, 6) if state.cost_known else None,
        "llm_in_flight_peak": ctx.llm.peak,
        "llm_backoffs": ctx.llm.backoffs,
        "pruned_redundant": len(redundant),
        "tokens_saved_est": sum(r["tokens_saved_est"] for r in redundant),
        **checks.metrics(),
    }
    run.summary = {
        "run_id": run.id,
        "status": run.status.value,
        "goal": run.config.goal,
        "strategy": run.strategy,
        "provider": run.provider_name,
        "report_path": run.report_path,
        "history_dir": str(run.history.dir),
        "citations": citations,
        "unresolved_citations": unresolved,
        "metrics": metrics,
        "missing_branches": missing,
        "pruned_redundant": redundant,  # E10: subtasks whose passages others held; not missing
        "stop_reason": state.stop_reason,
        "uncovered": [a.text for a in checks.uncovered],
        "answered": checks.answered,  # False: its citations are the closest passages, not an answer
        "next_command": _next_search(run, checks),
        "unsupported_claims": [v.to_dict() for v in checks.unsupported],
        "conflicts": checks.conflicts,
        "resume_command": _next(run, checks, state.stop_reason)
        if run.status is not RunStatus.SUCCESS
        else None,
        "failures": [{k: v for k, v in f.items() if k != "trace"} for f in run.failures],
        "checkpoints": [c.to_dict() for c in checkpoints],
        "diagnostics": {"conflict_copies": conflict_copies},
        "garden": state.garden if ctx.config.garden else None,
        "learning": state.learning,
        "over_budget": over,  # None within the budget
    }
    if state.software is not None:
        run.summary["software"] = state.software
    h = run.history
    manifest = run.manifest() | {"status": run.status.value, "finished": run.finished_at}
    skills = ctx.skills.unsaved()  # the routings since the last checkpoint, with the other files
    h.write_together(
        [
            ("dag.json", run.dag.to_json()),
            ("metrics/summary.json", {**metrics, "nodes": run.metrics}),
            ("final.report.md", run.report),
            ("final.summary.json", run.summary),
            *([("decisions/skills.json", skills)] if skills is not None else []),
        ],
        last=("run.manifest.json", manifest),  # the run is finished once every other file is there
        # dag.json and skills.json as their checkpoints; the metrics (a row per node) are read by programs.
        compact=("dag.json", "metrics/summary.json", "decisions/skills.json"),
        alongside=[lambda: ctx.provider.write(h.dir / "replay" / "manifest.json")],
    )
    ctx.emit(RunFinished(status=run.status.value, tokens=tokens, duration_ms=round(seconds * 1000, 1)))
