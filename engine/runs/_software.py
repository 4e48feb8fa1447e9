"""A software run's code (issue 13, O1–O7): contracts first, then the implementations against the export
index, tests as the mode says, checks with repairs, and at the root the manifest, its report and the writes.

Each node of the software skeleton answers in prose as any node does (its design notes, cited); then the
node's *code step* runs:

- ``types_contracts`` / ``db_schema`` (pass 1): the contract files; the export index is built from them and
  is the ground truth of pass 2; spec-first test stubs follow (``--tests`` stubs, tdd, or the default);
- ``implementation`` (pass 2): the code, checked at once (basic) and repaired locally; what it needs from
  the contracts and cannot have becomes a ``contract_change_request``;
- ``verification``: the post-implementation tests (``--tests post`` or the default), then every check of
  the run's level, with repairs and escalations (``_code_checks``);
- the root: anything still open is reconciled and checked, then ``_code_output`` keeps the manifest and
  writes it if asked. A run with no model copies the code from the vault's notes instead (``_code_source``).
"""

from __future__ import annotations

from ..build import RepairLedger, Workspace, contract_stubs
from ..events import CodeProduced, ContractChangeRequested
from ._cache_steps import CacheSteps
from ._code_checks import CodeChecks
from ._code_output import finish_code
from ._code_source import CodeSource
from ._context import RunContext
from ._model_calls import ModelCalls
from .dag import Node

__all__ = ["CONTRACT_STAGES", "SoftwareBuild", "step_of"]

CONTRACT_STAGES = ("types_contracts", "db_schema")
_STEPS = {
    "types_contracts": "contracts",
    "db_schema": "contracts",
    "implementation": "implementation",
    "verification": "tests",
}
_WORKSPACE = "artifacts/workspace.json"

_INSTRUCTIONS = {
    "contracts": "Write only the contracts: the package layout (__init__ files), types and data classes, "
    "protocols or interfaces, exceptions, and the signatures of the public functions with docstrings "
    "(bodies raise NotImplementedError). Type-annotate everything. No implementation, no tests.",
    "implementation": "Write the implementation against the contracts shown: complete, type-annotated "
    "code. Do not rewrite contract files unless you must (then say why in a contract_change_request).",
    "tests": "Write pytest tests of the behaviour of the code shown (typical, edge and invalid inputs), in "
    "tests/test_*.py, importing the package as its files lay it out. Type-annotate test functions.",
    "tdd": "Write the pytest tests first, from the contracts alone: each public function's behaviour on "
    "typical, edge and invalid inputs, in tests/test_*.py. The implementation will be written to pass them.",
    "co": " Also write unit tests for the pure functions you write, in tests/test_*.py.",
}


def step_of(ctx: RunContext, node: Node) -> str | None:
    """The code step of a node of a software run (a part takes its parent's stage)."""
    stage = node.stage
    if stage == "part" and node.parent:
        stage = ctx.run.dag.node(node.parent).stage
    if node.id == "root" and not ctx.run.dag.children(node.id):
        return "single"  # an undivided software goal: contracts and code in one go
    return _STEPS.get(stage)


class SoftwareBuild:
    """The code of one software run: the workspace, where files come from, checks and repairs."""

    def __init__(self, ctx: RunContext, calls: ModelCalls, cache: CacheSteps) -> None:
        self.ctx = ctx
        history = ctx.history
        if ctx.resumed is not None and (history.dir / _WORKSPACE).exists():
            self.ws = Workspace.from_dict(history.read_json(_WORKSPACE))
        else:
            self.ws = Workspace(run_id=ctx.run_id)
        self.ledger = RepairLedger()
        self.source = CodeSource(ctx, calls, cache, self.ws)
        self.checks = CodeChecks(ctx, self.ws, self.source, self.ledger)
        self.ws.model_written = self.source.has_model

    @property
    def active(self) -> bool:
        return self.ctx.run.strategy == "software"

    @property
    def tests_mode(self) -> str:
        return self.ctx.config.tests or "stubs+post"

    async def after_node(self, node: Node) -> None:
        """The node's code step, after its prose answer; the root ends the build."""
        if not self.active:
            return
        step = step_of(self.ctx, node)
        if step == "contracts":
            await self._contracts(node)
        elif step == "implementation":
            await self._implementation(node)
        elif step == "tests":
            await self._tests(node)
        elif step == "single":
            await self._contracts(node)
            await self._implementation(node)
            await self._tests(node)
        self.ctx.history.write_json(_WORKSPACE, self.ws.to_dict())

    async def finish(self) -> None:
        """After the DAG, whatever became of the root: reconcile and check what changed, then keep the
        manifest, write it if asked, and say in the report what holds and what does not."""
        if not self.active:
            return
        root = self.ctx.run.dag.root()
        await self.checks.final(root)
        await finish_code(self.ctx, self.ws, self.checks, self.ledger)
        self.ctx.history.write_json(_WORKSPACE, self.ws.to_dict())

    # --- the steps -----------------------------------------------------------------------------------

    async def _produce(
        self, node: Node, step: str, role: str, instructions: str, *, contract: bool = False
    ) -> list[str]:
        if self.source.has_model:
            context = "\n\n".join(
                f"{c.get('text', '')}\n{c.get('citation', '')}" for c in node.retrieval.get("context", [])
            )
            files, requests = await self.source.from_model(node, step, instructions, context=context)
            for detail in requests:
                self.ws.request_change(node.id, detail)
                self.ctx.emit(ContractChangeRequested(node=node.id, detail=detail))
        else:
            files = await self.source.from_vault(node, role)
        paths = self.ws.add(files, contract=contract)
        self.ctx.emit(
            CodeProduced(node=node.id, step=step if self.source.has_model else "vault", files=paths)
        )
        return paths

    async def _contracts(self, node: Node) -> None:
        await self._produce(node, "contracts", "contracts", _INSTRUCTIONS["contracts"], contract=True)
        index = self.ws.export_index()
        self.ctx.history.write_json("artifacts/export_index.json", index.to_dict())
        mode = self.tests_mode
        if mode in ("stubs", "tdd", "stubs+post"):
            stubs = contract_stubs(index, self.ws.contract_files, node.id)
            paths = self.ws.add(stubs)
            if paths:
                self.ctx.emit(CodeProduced(node=node.id, step="stubs", files=paths))
        if mode == "tdd" and self.source.has_model:
            await self._produce(node, "tests", "tests", _INSTRUCTIONS["tdd"])

    async def _implementation(self, node: Node) -> None:
        if not self.source.has_model:  # contract files only this node's notes hold are still contracts
            late = await self.source.from_vault(node, "contracts")
            if late:
                paths = self.ws.add(late, contract=True)
                self.ctx.emit(CodeProduced(node=node.id, step="vault", files=paths))
        extra = _INSTRUCTIONS["co"] if self.tests_mode == "co" else ""
        await self._produce(node, "implementation", "implementation", _INSTRUCTIONS["implementation"] + extra)
        await self.checks.local(node)

    async def _tests(self, node: Node) -> None:
        mode = self.tests_mode
        if mode != "off":
            if not self.source.has_model:  # the vault's own tests, if its notes have any
                await self._produce(node, "tests", "tests", "")
            elif mode in ("post", "stubs+post"):
                await self._produce(node, "tests", "tests", _INSTRUCTIONS["tests"])
        await self.checks.run_level(node)
