"""The max-iteration policy (H4): what a node whose retries ran out ends with, and what the run then is.

A node ends ``FAILED_WITH_DIAGNOSTIC`` when

- its retrieval is still weak (``RecoveryPolicy.weak``) after every rung of the recovery ladder: the
  regenerated script and the broadened direct search in Code Mode, and a hint given with ``shad resume
  --hint``. With ``--no-code-mode`` one search is all there is (no retry ran out): a weak one is answered
  as before. A checkpoint a *person* decided (approved, chose the notes, gave a hint) is not a failure:
  they took that evidence. Approved by the policy or the per-run cap, it still is;
- its code still fails blocking checks when the repair loop has nothing left to try (local repairs used
  up, the same failure signature again, the escalation cap, a budget, or no model to repair with).

It keeps its best artifact (the answer written from the best context the ladder found, or the code as
last checked), flagged; ``Node.diagnostic`` holds the failure report (each attempt with its retrieval
score or error signature) and the suggested next inputs (a hint, a narrower query, a vault or folder to
add, the exact command). Such a node is finished but not ok: its parent still synthesizes its answer,
marked as resting on weak evidence; its answer is never cached; a resume runs it again (``shad resume
RUN --hint TEXT`` adds a hint as one more rung).

The run's status (``RunConfig.on_exhausted``): ``partial`` (the default) makes the run PARTIAL, exit 3,
with the resume command; ``fail`` makes it FAILED_WITH_DIAGNOSTIC, exit 1 (for batches and CI that must
not take a weak answer). A run that waits for a person stays NEEDS_HUMAN either way.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from ..events import NodeFinished
from ..retrieval import RecoveryPolicy, RetrievalResult
from ..strategies import stage_subject
from ..text import parse_query, stem
from ._run import Run, RunStatus
from .dag import Node, NodeStatus

if TYPE_CHECKING:
    from ._context import RunContext

__all__ = [
    "ON_EXHAUSTED",
    "code_diagnostic",
    "failure_entries",
    "mark",
    "report_lines",
    "retrieval_diagnostic",
    "run_status",
    "usable",
]

ON_EXHAUSTED = ("partial", "fail")
FAILED = NodeStatus.FAILED_WITH_DIAGNOSTIC
_ANSWER_CHARS = 2000  # the best answer as the summary keeps it (the report and dag.json keep it whole)


def usable(node: Node) -> bool:
    """A node whose answer may be used: ok, or FAILED_WITH_DIAGNOSTIC with a best answer (flagged)."""
    return node.status.ok or (node.status is FAILED and bool(node.answer))


# --- retrieval ---------------------------------------------------------------------------------------------


def weak(result: RetrievalResult) -> str | None:
    return RecoveryPolicy().weak(result)


def retrieval_diagnostic(
    ctx: RunContext, node: Node, result: RetrievalResult, problem: str
) -> dict[str, Any]:
    """The diagnostic of a leaf whose retrieval stayed weak after the ladder (``problem`` says how)."""
    ladder = list(result.signals.get("ladder") or [])
    if not ladder:  # a direct search: the ladder had one rung
        ladder = [{"rung": result.method or "direct search", "score": result.retrieval_score}]
    missing = _missing_words(stage_subject(node.task), result)
    vaults = " ".join(f"--vault {shlex.quote(v)}" for v in ctx.config.vaults)
    hint = " ".join(missing[:4]) or node.task[:60]
    inputs = [
        {
            "kind": "hint",
            "text": f"a hint naming where the vault covers {hint!r} (a note, a folder, other words)",
            "command": f"shad resume {ctx.run_id} --hint {shlex.quote(hint)}",
        },
        {
            "kind": "query",
            "text": "a narrower search, to see what the vault holds on it",
            "command": f"shad vault search {shlex.quote(hint)} {vaults}",
        },
        {
            "kind": "vault",
            "text": "a vault or folder with notes on it, then the run again",
            "command": f"shad run {shlex.quote(ctx.config.goal)} {vaults} --vault DIR",
        },
    ]
    return {
        "kind": "retrieval",
        "reason": f"retrieval stayed weak after the recovery ladder ({result.method}): {problem}",
        "best_artifact": {
            "kind": "answer",
            "retrieval_score": result.retrieval_score,
            "notes": sorted({c.path for c in result.context}),
        },
        "failure_report": {
            "attempts": ladder,
            "queries": list(result.queries)[:10],
            "missing_words": missing[:10],
        },
        "next_inputs": inputs,
    }


def _missing_words(task: str, result: RetrievalResult) -> list[str]:
    texts = " ".join(c.text.lower() for c in result.context)
    out: list[str] = []
    for word in parse_query(task).words():
        if len(word) > 2 and stem(word) not in texts and word not in out:
            out.append(word)
    return out


# --- code --------------------------------------------------------------------------------------------------


def code_diagnostic(
    ctx: RunContext,
    owner: str,
    failures: list[dict[str, Any]],
    repairs: list[dict[str, Any]],
    files: list[str],
    manifest: str,
    level: str,
) -> dict[str, Any]:
    """The diagnostic of a node whose code still fails its blocking checks when repairs ran out."""
    tried = [r for r in repairs if r.get("node") == owner]
    made = [r for r in tried if r.get("outcome") != "refused" and r.get("attempt")]
    # why the loop stopped: the last attempt that did not fix anything and says why (a budget, no model)
    why = next(
        (str(r["reason"]) for r in reversed(tried) if r.get("reason") and r.get("outcome") != "fixed"), ""
    )
    classes = sorted({str(f.get("error_class", "")) for f in failures})
    paths = sorted({str(f.get("path", "")) for f in failures if f.get("path")})
    return {
        "kind": "code",
        "reason": f"its code still fails blocking checks ({', '.join(classes)}) after {len(made)} repair(s)"
        + (f": {why}" if why else ""),
        "best_artifact": {"kind": "code", "files": files, "manifest": manifest},
        "failure_report": {
            "attempts": [
                {
                    "attempt": r.get("attempt", 0),
                    "error_class": r.get("error_class", ""),
                    "signature": r.get("signature", ""),
                    "outcome": r.get("outcome", "applied"),
                    **({"reason": r["reason"]} if r.get("reason") else {}),
                }
                for r in tried
            ],
            "failures": [
                {
                    "error_class": f.get("error_class", ""),
                    "where": f"{f.get('path', '')}:{f.get('line', 0)}",
                    "message": str(f.get("message", ""))[:300],
                }
                for f in failures[:20]
            ],
        },
        "next_inputs": [
            {
                "kind": "resume",
                "text": "the node again, with fresh repairs (a model repairs; the offline provider cannot)",
                "command": f"shad resume {ctx.run_id}",
            },
            {
                "kind": "note",
                "text": "a vault note with a titled code block of how "
                + (", ".join(paths[:3]) or "the file")
                + ' should look (```python title="path"```), then the resume',
                "command": f"shad resume {ctx.run_id}",
            },
            {
                "kind": "check",
                "text": "the findings, checked again after a fix by hand",
                "command": f"shad verify {shlex.quote(manifest)} --level {level}",
            },
        ],
    }


# --- the node, the run -------------------------------------------------------------------------------------


def mark(ctx: RunContext, node: Node, diagnostic: dict[str, Any], *, emit: bool = True) -> None:
    """``node`` ends FAILED_WITH_DIAGNOSTIC; with ``emit``, its NODE_FAILED_WITH_DIAGNOSTIC event now (a
    node the orchestrator is finishing is announced by it)."""
    node.status, node.diagnostic = FAILED, diagnostic
    node.note = "; ".join(filter(None, [node.note, diagnostic["reason"]]))
    if emit:
        ctx.emit(event(node))
        ctx.save_dag(force=True)


def event(node: Node) -> NodeFinished:
    d = node.diagnostic
    return NodeFinished(
        node=node.id,
        tokens=node.tokens,
        duration_ms=node.duration_ms,
        error=str(d.get("reason", "")),
        diagnostic={k: d[k] for k in ("kind", "failure_report", "next_inputs") if k in d},
        status=FAILED.value,
    )


def failure_entries(run: Run) -> list[dict[str, Any]]:
    """One failure per FAILED_WITH_DIAGNOSTIC node, as the summary's ``failures`` keep them."""
    out = []
    for node in run.dag:
        if node.status is not FAILED:
            continue
        d = node.diagnostic
        best = dict(d.get("best_artifact", {}))
        if best.get("kind") == "answer":
            best["answer"] = node.answer[:_ANSWER_CHARS]
        out.append(
            {
                "node_id": node.id,
                "phase": str(d.get("kind", "")),
                "status": FAILED.value,
                "error_class": "RetriesExhausted",
                "message": str(d.get("reason", "")),
                "task": node.task,
                "best_artifact": best,
                "failure_report": d.get("failure_report", {}),
                "next_inputs": d.get("next_inputs", []),
            }
        )
    return out


def run_status(run: Run, status: RunStatus) -> RunStatus:
    """The run's status under the policy, given the one the rest of the run settled on."""
    if status in (RunStatus.NEEDS_HUMAN, RunStatus.INTERRUPTED) or not any(
        n.status is FAILED for n in run.dag
    ):
        return status
    policy = getattr(run.config, "on_exhausted", "partial")
    if policy == "fail":
        return RunStatus.FAILED_WITH_DIAGNOSTIC
    return RunStatus.PARTIAL if status is not RunStatus.FAILED else status


def report_lines(run: Run) -> list[str]:
    """The report's section on what failed after every retry, and what to try next."""
    nodes = [n for n in run.dag if n.status is FAILED]
    if not nodes:
        return []
    lines = ["## What failed and what to try", ""]
    lines += [
        "> [!warning] Retries ran out for the node(s) below. Each kept its best artifact (an answer on",
        "> weak evidence, or code that still fails its checks): it may be incomplete or wrong.",
        "",
    ]
    for node in nodes:
        d = node.diagnostic
        lines += [
            f"### `{node.id}` {node.task[:120]}",
            "",
            f"**Failed with a diagnostic:** {d.get('reason', '')}.",
            "",
        ]
        best = d.get("best_artifact", {})
        if best.get("kind") == "answer":
            kept = "kept above, flagged" if node.parent is None else "used by its parent, flagged"
            lines.append(
                f"Best answer ({kept}): from {len(best.get('notes', []))} note(s), "
                f"retrieval score {best.get('retrieval_score', 0):.2f}."
            )
        elif best.get("kind") == "code" and best.get("best_version"):
            lines.append(
                f"Best code: an earlier version with {best['best_findings']} blocking finding(s), kept in "
                f"`{best['best_version']}` (a repair made it worse; the manifest holds the last version)."
            )
        elif best.get("kind") == "code":
            files = ", ".join(f"`{p}`" for p in best.get("files", [])[:10]) or "none"
            lines.append(f"Best code (as last checked, in the manifest): {files}.")
        report = d.get("failure_report", {})
        lines += ["", "Tried:", ""]
        for a in report.get("attempts", []):
            if "rung" in a:
                why = a.get("problem") or "good enough"
                score = f"score {a['score']:.2f}" if isinstance(a.get("score"), (int, float)) else ""
                lines.append(
                    f"- {a['rung']}: " + (why if why.startswith("retrieval score") else f"{score}; {why}")
                )
            else:
                lines.append(
                    f"- repair #{a.get('attempt', 0)} ({a.get('error_class', '')}, signature "
                    f"{a.get('signature', '')}): {a.get('outcome', '')}"
                    + (f" — {a['reason']}" if a.get("reason") else "")
                )
        for f in report.get("failures", [])[:10]:
            lines.append(f"- still failing: [{f['error_class']}] `{f['where']}` {f['message'][:160]}")
        if report.get("missing_words"):
            lines.append(f"- words of the task no passage holds: {', '.join(report['missing_words'])}")
        lines += ["", "Try:", ""]
        lines += [f"- {i['text']}: `{i['command']}`" for i in d.get("next_inputs", [])]
        lines.append("")
    return lines
