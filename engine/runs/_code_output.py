"""The end of a software run's code: ``artifacts/manifest.json`` (and the checks, repairs and export index
beside it) in the history, the files written under ``--output`` when ``--write-files`` asks and the
blocking checks passed, and the report's sections on files, checks, repairs and writes.

What keeps the run from SUCCESS is said as a failure of the run (so the status is PARTIAL and the report
says why and what to do): no code, blocking findings, open contract change requests, refused writes. A node
whose files still fail blocking checks when the repair loop had nothing left to try ends
FAILED_WITH_DIAGNOSTIC (``_exhausted``), with its code as last checked and what its repairs tried.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from ..build import RepairLedger, Workspace, failures_of
from ..errors import ShadError
from ..events import FilesWritten
from ..output import Manifest, write_manifest
from ._code_checks import CodeChecks
from ._context import RunContext, failure
from ._exhausted import code_diagnostic, mark
from .dag import NodeStatus

__all__ = ["MANIFEST_PATH", "finish_code"]

MANIFEST_PATH = "artifacts/manifest.json"


class CodeIncomplete(ShadError):
    """The software run's code is missing, failed its blocking checks, or was not written."""


async def finish_code(ctx: RunContext, ws: Workspace, checks: CodeChecks, ledger: RepairLedger) -> None:
    manifest = ws.manifest()
    history = ctx.history
    await asyncio.to_thread(manifest.save, history.dir / MANIFEST_PATH)
    report = checks.last.to_dict() if checks.last is not None else None
    if report is not None:
        history.write_json("artifacts/verify.json", report)
    history.write_json("artifacts/repairs.json", ledger.log)
    if report is not None and not report["ok"]:
        _diagnose(ctx, ws, report, ledger, checks)
    written = await asyncio.to_thread(_write, ctx, manifest, report)
    problems = _problems(ctx, ws, report, written, checks.stopped)
    for message, hint in problems:
        # the next step is part of the message: the report and the summary show messages, not hints
        problem = CodeIncomplete(f"{message}. Next: {hint}", hint=hint)
        ctx.run.failures.append(failure("root", "code", problem, hint=hint))
    ctx.state.software = {
        "files": len(manifest.files),
        "model_written": ws.model_written,
        "level": ctx.config.verify,
        "ok": None if report is None else bool(report["ok"]),
        "checks": {} if report is None else {k: v["status"] for k, v in report["checks"].items()},
        "tests": ctx.config.tests or "stubs+post",
        "repairs": len([e for e in ledger.log if e.get("outcome") != "refused"]),
        "escalations": ledger.escalations,
        "open_change_requests": [n.to_dict() for n in ws.open_requests()],
        "written": written,
        "manifest": MANIFEST_PATH,
    }
    ctx.state.software_report = _sections(ctx, manifest, ws, report, ledger, written)


def _diagnose(
    ctx: RunContext, ws: Workspace, report: dict[str, Any], ledger: RepairLedger, checks: CodeChecks
) -> None:
    """The nodes whose files still fail blocking checks: the repair loop stopped (it only stops with
    failures left when nothing more could be tried), so each ends FAILED_WITH_DIAGNOSTIC. When an earlier
    version of a node's files had fewer blocking findings (a repair made it worse), that version is kept
    beside the manifest (``artifacts/best/<node>.json``) as its best code."""
    dag = ctx.run.dag
    by_owner: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in failures_of(report, ws.owners(), ws.contract_files):
        by_owner[f.owner if f.owner in dag else dag.root().id].append(f.to_dict())
    manifest = str(ctx.history.dir / MANIFEST_PATH)
    for owner, group in sorted(by_owner.items()):
        node = dag.node(owner)
        if not node.status.ok:  # failed, pruned or flagged already: nothing of it to keep as it was
            continue
        files = (
            sorted(ws.files_of(owner)) if owner != dag.root().id or ws.files_of(owner) else sorted(ws.files)
        )
        diagnostic = code_diagnostic(ctx, owner, group, ledger.log, files, manifest, report["level"])
        found, best = checks.best.get((owner, report["level"]), (len(group), {}))
        if found < len(group) and best != {p: ws.files[p].content for p in ws.files_of(owner)}:
            rel = f"artifacts/best/{owner}.json"
            ctx.history.write_json(
                rel, {"node": owner, "level": report["level"], "findings": found, "files": best}
            )
            diagnostic["best_artifact"] |= {
                "best_version": str(ctx.history.dir / rel),
                "best_findings": found,
            }
        mark(ctx, node, diagnostic)


def _write(ctx: RunContext, manifest: Manifest, report: dict[str, Any] | None) -> dict[str, Any] | None:
    config = ctx.config
    if not config.write_files or not config.output:
        return None
    if report is not None and not report["ok"]:
        result: dict[str, Any] = {
            "output": config.output,
            "written": [],
            "skipped": [],
            "refused": [],
            "blocked": "blocking checks failed: nothing was written",
        }
    elif not manifest.files:
        result = {"output": config.output, "written": [], "skipped": [], "refused": [], "blocked": "no files"}
    else:
        result = write_manifest(manifest, config.output, overwrite=config.overwrite).to_dict()
    ctx.history.write_json("artifacts/write_report.json", result)
    ctx.emit(
        FilesWritten(
            output=config.output,
            written=len(result["written"]),
            skipped=len(result["skipped"]),
            refused=len(result["refused"]),
        )
    )
    return result


def _problems(
    ctx: RunContext,
    ws: Workspace,
    report: dict[str, Any] | None,
    written: dict[str, Any] | None,
    stopped: str | None,
) -> list[tuple[str, str]]:
    where = ctx.history.dir / MANIFEST_PATH
    out: list[tuple[str, str]] = []
    waiting = [n.id for n in ctx.run.dag if n.status is NodeStatus.NEEDS_HUMAN]
    stopped_run = ctx.state.stop_reason or (f"{', '.join(waiting)} wait at a checkpoint" if waiting else None)
    if not ws.files and stopped_run:
        next_step = f"`shad checkpoint {ctx.run_id}`" if waiting else f"`shad resume {ctx.run_id}`"
        out.append((f"no code was produced before the run stopped ({stopped_run})", next_step))
    elif not ws.files:
        how = (
            "the vault's notes hold no code block that names a file"
            ' (```python title="pkg/x.py"```) for this goal'
            if not ws.model_written
            else "no node produced a file"
        )
        out.append(
            (f"no code was produced: {how}", "add pattern notes with titled code blocks, or run with a model")
        )
    if report is not None and not report["ok"]:
        failed = [k for k in report["blocking"] if report["checks"].get(k, {}).get("status") == "fail"]
        count = sum(len(report["checks"][k]["findings"]) for k in failed)
        out.append(
            (
                f"the code fails its blocking checks ({', '.join(failed)}: {count} finding(s))"
                + (f"; {stopped}" if stopped else ""),
                f"see Checks below; after fixing: `shad verify {where} --level {report['level']}`",
            )
        )
    if ws.open_requests():
        out.append(
            (
                f"{len(ws.open_requests())} contract change request(s) are not reconciled",
                "see Contract change requests below; a run with a model reconciles them",
            )
        )
    if written is not None:
        kept = [x for x in written["skipped"] if x.get("reason") != "unchanged"]
        why = written.get("blocked") or "; ".join(
            part
            for part in (
                f"{len(written['refused'])} file(s) refused" if written["refused"] else "",
                f"{len(kept)} existing file(s) kept (give --overwrite to replace them)" if kept else "",
            )
            if part
        )
        if why:
            out.append(
                (
                    f"files not written to {written['output']}: {why}",
                    f"fix what blocks, then `shad export {ctx.run_id} --output {written['output']}`",
                )
            )
    return out


def _sections(
    ctx: RunContext,
    manifest: Manifest,
    ws: Workspace,
    report: dict[str, Any] | None,
    ledger: RepairLedger,
    written: dict[str, Any] | None,
) -> list[str]:
    lines = ["## Files", ""]
    if not ws.model_written:
        lines += ["No language model wrote this code: each file is copied from the vault note it cites.", ""]
    if manifest.files:
        lines += ["| file | language | lines | from nodes | from notes |", "|---|---|---|---|---|"]
        for f in manifest.files:
            notes = ", ".join(f.source_notes) or "—"
            nodes = ", ".join(f"`{n}`" for n in f.source_nodes) or "—"
            lines.append(f"| `{f.path}` | {f.language} | {f.content.count(chr(10))} | {nodes} | {notes} |")
    else:
        lines.append("No files.")
    lines += ["", f"Manifest: `{ctx.history.dir / MANIFEST_PATH}`", ""]
    if report is None:
        lines += ["## Checks", "", "Not checked (`--verify off`).", ""]
    else:
        verdict = "pass" if report["ok"] else "**blocking findings**"
        lines += [
            f"## Checks ({report['level']}: {verdict})",
            "",
            "| check | status | findings | blocking | note |",
            "|---|---|---|---|---|",
        ]
        for name, result in report["checks"].items():
            blocking = "yes" if name in report["blocking"] else "no"
            note = result.get("reason", "").replace("|", "/")[:120]
            lines.append(f"| {name} | {result['status']} | {len(result['findings'])} | {blocking} | {note} |")
        found = [(n, f) for n, r in report["checks"].items() for f in r["findings"]]
        if found:
            lines += ["", "Findings:", ""]
            lines += [f"- {n}: `{f['path']}:{f['line']}` {f['message'][:300]}" for n, f in found[:50]]
        lines += ["", f"Isolation: {report.get('isolation', '')}", ""]
    if ledger.log:
        lines += ["## Repairs", ""]
        for e in ledger.log:
            lines.append(
                f"- `{e['node']}` {e.get('scope', 'local')} #{e.get('attempt', 0)} "
                f"({e.get('error_class', '')}, signature {e.get('signature', '')}): "
                f"{e.get('outcome', 'applied')}" + (f" — {e['reason']}" if e.get("reason") else "")
            )
        lines.append("")
    requests = [n for n in ws.notes if n.kind.startswith("contract_change")]
    if requests:
        lines += ["## Contract change requests", ""]
        lines += [
            f"- `{n.node}` ({n.kind.replace('contract_change_', '')}): {n.detail[:300]}" for n in requests
        ]
        lines.append("")
    if written is not None:
        lines += ["## Written", ""]
        if written.get("blocked"):
            lines.append(f"Nothing written to `{written['output']}`: {written['blocked']}.")
        else:
            lines.append(
                f"To `{written['output']}`: {len(written['written'])} written, "
                f"{len(written['skipped'])} skipped, {len(written['refused'])} refused."
            )
            lines += [f"- skipped `{s['path']}`: {s['reason']}" for s in written["skipped"]]
            lines += [f"- refused `{s['path']}`: {s['reason']}" for s in written["refused"]]
        lines.append("")
    return lines
