"""Checks and repairs of a software run's code (seed §2.6, O4–O5).

``local`` checks an implementation node's own files at ``basic`` as soon as it has written them and lets it
repair them; what only the contracts can fix becomes a ``contract_change_request``. ``run_level`` checks
the whole manifest at the run's level (``--verify``, ``--block-on``, ``--warn-only``): it reconciles the
change requests first (an escalation: the contracts are rewritten), then repairs round by round. A node
repairs at most ``MAX_LOCAL_REPAIRS`` times, a run escalates at most ``MAX_ESCALATIONS`` times, and the
same failures (by signature) are never sent back twice. Every attempt is kept under
``artifacts/repairs/`` in the history, with the failures it answered and what came of it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter, defaultdict
from typing import Any

from ..build import (
    MAX_LOCAL_REPAIRS,
    Failure,
    RepairLedger,
    Workspace,
    change_requests,
    failures_of,
    file_blocks,
    signature,
)
from ..events import CodeRepaired, ContractChangeRequested, NodeChecked
from ..output import ManifestFile, check_integrity
from ..prompts import render
from ..verify import VerifyReport, verify
from ._code_source import CodeSource, files_prompt
from ._context import RunContext
from ._model_calls import BudgetExhausted
from .dag import Node

__all__ = ["CodeChecks"]


class CodeChecks:
    """The checks of one run's workspace, the repair loop, and the last report."""

    def __init__(self, ctx: RunContext, ws: Workspace, source: CodeSource, ledger: RepairLedger) -> None:
        self.ctx, self.ws, self.source, self.ledger = ctx, ws, source, ledger
        self.last: VerifyReport | None = None
        self._checked: str = ""  # the manifest (paths and hashes) the last report is about
        # attempts to settle at the next check: owner, attempt, class, signature, the (class, path)s answered
        self._pending: list[tuple[str, int, str, str, frozenset[tuple[str, str]]]] = []
        self.stopped: str | None = None  # why repairs stopped early (a budget)
        # (node, level) -> (its blocking findings, its files): the best version of each node's code seen at
        # each level. A repair can make code worse; when repairs run out, the best one is what is kept.
        self.best: dict[tuple[str, str], tuple[int, dict[str, str]]] = {}

    def _state(self) -> str:
        return hashlib.sha256(
            repr(sorted((p, f.hash) for p, f in self.ws.files.items())).encode()
        ).hexdigest()

    async def _verify(self, level: str) -> VerifyReport:
        cfg = self.ctx.config
        report = await asyncio.to_thread(
            verify, self.ws.manifest(), level, block_on=cfg.block_on, warn_only=cfg.warn_only
        )
        self._remember(report)
        return report

    def _remember(self, report: VerifyReport) -> None:
        owners = self.ws.owners()
        counts = Counter(f.owner for f in failures_of(report.to_dict(), owners, self.ws.contract_files))
        for owner in {o for o in owners.values() if o}:
            key, found = (owner, report.level), counts.get(owner, 0)
            if key not in self.best or found < self.best[key][0]:
                self.best[key] = (found, {p: self.ws.files[p].content for p in self.ws.files_of(owner)})

    # --- the three entry points ----------------------------------------------------------------------

    async def local(self, node: Node) -> None:
        """An implementation node's own files at basic, with local repairs."""
        if self.ctx.config.verify == "off" or not self.ws.files_of(node.id):
            return
        report = await self._loop(node, "basic", only={node.id})
        self._announce(report, [node.id])

    async def run_level(self, node: Node) -> None:
        """The whole manifest at the run's level, with reconciliation and repairs."""
        level = self.ctx.config.verify
        if level == "off":
            return
        report = await self._loop(node, level, only=None)
        self.last, self._checked = report, self._state()
        owners = sorted({o for o in self.ws.owners().values() if o} | {node.id})
        self._announce(report, owners, whole=node.id)

    async def final(self, root: Node) -> None:
        """At the root: check again when something changed since the last check (or nothing checked)."""
        if self.ctx.config.verify == "off" or not self.ws.files:
            return
        if self.last is None or self._checked != self._state() or self.ws.open_requests():
            await self.run_level(root)

    # --- the loop ------------------------------------------------------------------------------------

    async def _loop(self, node: Node, level: str, only: set[str] | None) -> VerifyReport:
        report = await self._verify(level)
        for _ in range(MAX_LOCAL_REPAIRS + 2):
            fails = failures_of(report.to_dict(), self.ws.owners(), self.ws.contract_files)
            fails = [
                Failure(f.error_class, f.path, f.line, f.message, f.owner or node.id, f.scope) for f in fails
            ]
            self._settle(fails)
            if only is not None:
                fails = [f for f in fails if f.owner in only]
            if not fails and not (only is None and self.ws.open_requests()):
                return report
            progressed = self._drop_unsafe([f for f in fails if f.error_class == "integrity"])
            fails = [f for f in fails if f.error_class != "integrity"]
            escalate = [f for f in fails if f.scope == "escalate"]
            self._request_changes(node, escalate)
            if only is None:
                progressed |= await self._reconcile(node, escalate)
            by_owner: dict[str, list[Failure]] = defaultdict(list)
            for f in fails:
                if f.scope == "local":
                    by_owner[f.owner].append(f)
            for owner, group in by_owner.items():
                progressed |= await self._repair(node, owner, group)
            if not progressed:
                return report
            report = await self._verify(level)
        self._settle(failures_of(report.to_dict(), self.ws.owners(), self.ws.contract_files))
        return report

    def _drop_unsafe(self, unsafe: list[Failure]) -> bool:
        """A path that can never be written safely (absolute, ``..``, a collision) leaves the manifest,
        the newest first, until the rest is sound: no model is needed for that, and nothing is lost
        silently (the manifest's notes and the report say what was dropped and why)."""
        dropped = False
        for f in sorted(
            unsafe, key=lambda f: -list(self.ws.files).index(f.path) if f.path in self.ws.files else 0
        ):
            if not check_integrity(self.ws.manifest()):
                break
            if self.ws.drop(f.path, f.message):
                dropped = True
                sig = signature([f])
                self.ledger.log.append(
                    {
                        "node": f.owner,
                        "scope": "local",
                        "attempt": 0,
                        "signature": sig,
                        "error_class": "integrity",
                        "outcome": "fixed",
                        "reason": f"dropped {f.path!r} from the manifest: {f.message}",
                    }
                )
                self._event(f.owner, 0, "integrity", "local", sig, "fixed")
        return dropped

    def _settle(self, fails: list[Failure]) -> None:
        """Say how the attempts made before this check went: fixed, or still failing."""
        failing = {(f.error_class, f.path) for f in fails}
        for owner, attempt, error_class, sig, answered in self._pending:
            outcome = "still failing" if answered & failing else "fixed"
            self._event(owner, attempt, error_class, "local" if attempt > 0 else "escalate", sig, outcome)
            for entry in self.ledger.log:
                if entry["node"] == owner and entry.get("signature") == sig:
                    entry["outcome"] = outcome
        self._pending = []

    def _event(self, node: str, attempt: int, error_class: str, scope: str, sig: str, outcome: str) -> None:
        self.ctx.emit(
            CodeRepaired(
                node=node,
                attempt=abs(attempt),
                error_class=error_class,
                scope=scope,
                signature=sig,
                outcome=outcome,
            )
        )

    # --- repairs and escalations ---------------------------------------------------------------------

    async def _repair(self, node: Node, owner: str, group: list[Failure]) -> bool:
        sig, error_class = signature(group), group[0].error_class
        if not self.source.has_model or self.stopped:
            if not self.ledger.repeated(owner, sig):
                reason = self.stopped or "no model to repair with (offline provider)"
                self.ledger.log.append(
                    {
                        "node": owner,
                        "scope": "local",
                        "signature": sig,
                        "outcome": "refused",
                        "reason": reason,
                    }
                )
                self._event(owner, 0, error_class, "local", sig, "refused")
            return False
        if self.ledger.repeated(owner, sig):
            self._event(owner, self.ledger.attempts.get(owner, 0), error_class, "local", sig, "repeated")
            return False
        if not self.ledger.may_repair(owner):
            self._event(owner, self.ledger.attempts.get(owner, 0), error_class, "local", sig, "refused")
            return False
        involved = {f.path for f in group} | self.ws.contract_files
        if any(f.error_class == "test" for f in group):  # a failing test may be the code's fault
            involved |= {p for p, f in self.ws.files.items() if f.language == "python"}
        shown = [self.ws.files[p] for p in self.ws.files if p in involved]
        return await self._apply(
            node,
            owner,
            "local",
            group,
            sig,
            render(
                "repair_code",
                goal=self.ctx.config.goal,
                failures=_failures_text(group),
                files=files_prompt(shown),
                index=json.dumps(self.ws.export_index().to_dict()["exports"]),
            ),
        )

    async def _reconcile(self, node: Node, escalate: list[Failure]) -> bool:
        """The parent's side of a contract change: the contracts are rewritten with every open request."""
        requests = self.ws.open_requests()
        if not requests:
            return False
        detail = "\n".join(f"- from {r.node}: {r.detail}" for r in requests)
        sig = hashlib.sha256(detail.encode()).hexdigest()[:12]
        owner = next((self.ws.owner(p) for p in sorted(self.ws.contract_files)), "") or node.id
        if not self.source.has_model or self.stopped or not self.ledger.may_escalate():
            if not self.ledger.repeated("contracts", sig):
                self._event(owner, 0, "contract", "escalate", sig, "refused")
            return False
        if self.ledger.repeated("contracts", sig):
            return False
        contracts = [self.ws.files[p] for p in sorted(self.ws.contract_files) if p in self.ws.files]
        prompt = render(
            "code",
            goal=self.ctx.config.goal,
            step="reconcile",
            task=f"Reconcile the contracts of: {self.ctx.config.goal}",
            instructions="Rewrite the contract files so that these change requests are met, keeping every "
            f"name that other files already use. Reply with each changed contract file complete.\n{detail}",
            files=files_prompt(
                contracts + [self.ws.files[p] for p in self.ws.files if p not in self.ws.contract_files]
            ),
            index=json.dumps(self.ws.export_index().to_dict()["exports"]),
            context="(none)",
            dependencies=", ".join(self.ws.dependencies) or "none",
        )
        changed = await self._apply(node, owner, "escalate", escalate, sig, prompt, contract=True)
        if changed:
            self.ws.settle_requests(f"reconciled by {node.id}")
        return changed

    async def _apply(
        self,
        node: Node,
        owner: str,
        scope: str,
        group: list[Failure],
        sig: str,
        prompt: str,
        *,
        contract: bool = False,
    ) -> bool:
        inputs: dict[str, Any] = {"failures": [f.to_dict() for f in group], "signature": sig, "owner": owner}
        try:
            text = await self.source.ask(node, "repair_code" if scope == "local" else "code", prompt, inputs)
        except BudgetExhausted as exc:
            self.stopped = f"repairs stopped: {exc.message}"
            return False
        blocks = file_blocks(text)
        old = self.ws.files
        files = [
            ManifestFile.make(
                b.path,
                b.content,
                source_nodes=[
                    old[b.path].source_nodes[0] if b.path in old and old[b.path].source_nodes else owner
                ],
                source_notes=old[b.path].source_notes if b.path in old else (),
            )
            for b in blocks
        ]
        paths = self.ws.add(files, contract=False)
        if contract:
            self.ws.contract_files |= {p for p in paths if p in self.ws.contract_files or p not in old}
        for detail in change_requests(text):
            self.ws.request_change(owner, detail)
            self.ctx.emit(ContractChangeRequested(node=owner, detail=detail))
        number = self.ledger.record(
            owner,
            scope,
            {"signature": sig, "error_class": group[0].error_class if group else "contract", "files": paths},
        )
        self.ctx.history.write_json(
            f"artifacts/repairs/{owner}-{scope}-{number}.json",
            {
                **inputs,
                "scope": scope,
                "attempt": number,
                "by": node.id,
                "files": paths,
                "reply": text[:20_000],
            },
        )
        self._pending.append(
            (
                owner,
                number if scope == "local" else -number,
                group[0].error_class if group else "contract",
                sig,
                frozenset((f.error_class, f.path) for f in group),
            )
        )
        return bool(paths)

    def _request_changes(self, node: Node, escalate: list[Failure]) -> None:
        """A contract mismatch found by a check becomes a change request of the file's owner."""
        known = {n.detail for n in self.ws.notes}
        for f in escalate:
            detail = f"{f.path}:{f.line}: {f.message}"
            if detail not in known:
                known.add(detail)
                self.ws.request_change(f.owner or node.id, detail)
                self.ctx.emit(ContractChangeRequested(node=f.owner or node.id, detail=detail))

    # --- what the widget and the report see ----------------------------------------------------------

    def _announce(self, report: VerifyReport, nodes: list[str], whole: str | None = None) -> None:
        data = report.to_dict()
        for node_id in nodes:
            mine = set(self.ws.files_of(node_id)) if node_id != whole else set(self.ws.files)
            checks: dict[str, str] = {}
            count = 0
            for name, result in data["checks"].items():
                hits = [f for f in result["findings"] if f["path"] in mine]
                count += len(hits)
                if result["status"] == "skip":
                    checks[name] = "skip"
                else:
                    checks[name] = "fail" if hits and result["status"] == "fail" else "pass"
            status = "fail" if "fail" in checks.values() else "pass" if "pass" in checks.values() else "skip"
            event = NodeChecked(
                node=node_id, level=report.level, status=status, findings=count, checks=checks
            )
            if node_id in self.ctx.run.dag:
                self.ctx.run.dag.node(node_id).checks = event.payload()
            self.ctx.emit(event)


def _failures_text(group: list[Failure]) -> str:
    return "\n".join(f"- [{f.error_class}] {f.path}:{f.line}: {f.message}" for f in group[:40])
