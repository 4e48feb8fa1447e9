"""Where a software run's files come from: a model (asked for files as titled code blocks, answers cached
like any other node's) or, with the offline provider, the vault itself — the titled code blocks of the
pattern notes a node's retrieval found and the code notes they link to. No model means no code is written:
each file is copied from the one note that holds it and cites it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from ..build import FileBlock, Workspace, blocks_from_notes, change_requests, file_blocks
from ..errors import ShadError
from ..llm import LLMRequest, Tier
from ..output import ManifestFile
from ..prompts import render
from ._cache_steps import CacheSteps
from ._context import RunContext
from ._model_calls import ModelCalls
from .dag import Node

__all__ = ["MAX_CODE_NOTES", "MAX_FILE_CONTEXT", "CodeSource", "files_prompt", "role_of"]

MAX_FILE_CONTEXT = 40_000  # characters of project files put into one prompt
MAX_CODE_NOTES = 40  # notes read to find code, per node, when no model writes it
_CONTRACT_NAMES = (
    "models",
    "types",
    "interfaces",
    "contracts",
    "schema",
    "schemas",
    "protocols",
    "errors",
    "exceptions",
    "__init__",
)


def role_of(path: str) -> str:
    """contracts | tests | implementation, from a path alone (how vault code is split into the passes)."""
    parts = path.lower().split("/")
    name = parts[-1]
    stem = name.split(".")[0]
    if (
        parts[0] in ("tests", "test")
        or stem.startswith("test_")
        or stem.endswith(("_test", ".test", ".spec"))
    ):
        return "tests"
    if name.endswith((".test.ts", ".spec.ts", ".test.js", ".spec.js")) or name == "conftest.py":
        return "tests"
    if stem in _CONTRACT_NAMES or name.endswith(".d.ts") or name in ("pyproject.toml", "package.json"):
        return "contracts"
    return "implementation"


def files_prompt(files: list[ManifestFile], limit: int = MAX_FILE_CONTEXT) -> str:
    out: list[str] = []
    used = 0
    for f in files:
        block = f'```{f.language} title="{f.path}"\n{f.content.rstrip()}\n```'
        if used + len(block) > limit:
            out.append(f"(… {len(files) - len(out)} more file(s) left out for length)")
            break
        out.append(block)
        used += len(block)
    return "\n\n".join(out) or "(none yet)"


class CodeSource:
    """Files for one step of one node: from the model, or from the vault's notes when there is none."""

    def __init__(self, ctx: RunContext, calls: ModelCalls, cache: CacheSteps, ws: Workspace) -> None:
        self.ctx, self.calls, self.cache, self.ws = ctx, calls, cache, ws
        self._vault_pool: list[tuple[FileBlock, str]] | None = None
        self._notes: dict[str, Any] = {}  # path -> the note (None: it cannot be read)

    @property
    def has_model(self) -> bool:
        return self.ctx.provider.name != "offline"

    # --- from the vault -------------------------------------------------------------------------------

    async def from_vault(self, node: Node, role: str) -> list[ManifestFile]:
        """The vault's titled code blocks for ``role`` (contracts, implementation, tests), each citing
        its note; a path the workspace already holds is not taken twice."""
        pool = await asyncio.to_thread(self._pool, node)
        return [
            ManifestFile.make(b.path, b.content, source_nodes=[node.id], source_notes=[link])
            for b, link in pool
            if role_of(b.path) == role and b.path not in self.ws.files
        ]

    def _pool(self, node: Node) -> list[tuple[FileBlock, str]]:
        """Code notes: the goal's best hits and the notes this node retrieved, then the code notes they
        link to (one hop), at most ``MAX_CODE_NOTES``; each note is read once per run, and the pool grows
        as later nodes bring notes of their own."""
        if self._vault_pool is not None and not node.retrieval.get("notes"):
            return self._vault_pool
        # The goal's own hits first: the same for every node and every run, whatever each node's
        # retrieval found (a sandbox timing out under load must not change which code a run copies).
        seeds = [h.path for h in self.ctx.vaults.search(self.ctx.config.goal, limit=15)]
        seeds += [str(n[1]) for n in node.retrieval.get("notes", [])]
        order, texts, i = list(dict.fromkeys(seeds)), {}, 0
        while i < len(order) and i < MAX_CODE_NOTES:
            path, i = order[i], i + 1
            note = self._read(path)
            if note is None:
                continue
            if "```" in note.body:
                texts[note.path] = note.body
            for link in note.links:  # one hop: the code notes a pattern note points to
                if link.resolved and link.resolved not in order and path in seeds:
                    order.append(link.resolved)
        notes = [(f"[[{path[:-3] if path.endswith('.md') else path}]]", text) for path, text in texts.items()]
        known = {b.path for b, _ in self._vault_pool or []}
        found = [(b, n) for b, n in blocks_from_notes(notes) if b.path not in known]
        self._vault_pool = (self._vault_pool or []) + found
        return self._vault_pool

    def _read(self, path: str) -> Any:
        """The note, or None when it cannot be read (memoised: nodes share their seeds)."""
        if path not in self._notes:
            try:
                note = self.ctx.vaults.read_note(path)
            except ShadError:
                note = None
            self._notes[path] = note
        return self._notes[path]

    # --- from the model -------------------------------------------------------------------------------

    async def from_model(
        self, node: Node, step: str, instructions: str, *, context: str = "", tier: Tier = Tier.WORKER
    ) -> tuple[list[ManifestFile], list[str]]:
        """Ask for the files of ``step``; (files, contract change requests). Cached by the node's task,
        the files it was shown and the index; a reply with no file in it is asked for once more."""
        ctx = self.ctx
        shown = list(self.ws.files.values())
        index = json.dumps(self.ws.export_index().to_dict()["exports"], ensure_ascii=False)
        deps = ", ".join(self.ws.dependencies) or "none"
        values = {
            "goal": ctx.config.goal,
            "step": step,
            "task": node.task,
            "instructions": instructions,
            "files": files_prompt(shown),
            "index": index,
            "context": context or "(none)",
            "dependencies": deps,
        }
        fingerprint = hashlib.sha256(
            json.dumps([(f.path, f.hash) for f in shown] + [index, instructions]).encode()
        ).hexdigest()[:24]
        key = self.cache.key(node, f"code-{step}", tier.value, {"files": fingerprint})
        found = await self.cache.lookup(node, key, purpose=f"code-{step}")
        if found.value is not None:
            files = [ManifestFile.make(**f) for f in found.value.get("files", [])]
            return files, list(found.value.get("requests", []))
        mark = ctx.provider.mark()
        prompt = render("code", **values)
        request = LLMRequest(
            "code",
            tier,
            prompt,
            system=self.ctx.system_prompt(node),
            node_id=node.id,
            max_tokens=4000,
            inputs={"step": step, "task": node.task, "goal": ctx.config.goal, "files": fingerprint},
        )
        text = (await self.calls.call(node, request)).text
        blocks, requests = file_blocks(text), change_requests(text)
        if not blocks:  # once more, saying what was wrong (models drift into prose)
            request.prompt = prompt + (
                "\n\nYour previous reply had no file in it. Reply with the files only, each as a fenced "
                'code block with title="path".'
            )
            text = (await self.calls.call(node, request)).text
            blocks, requests = file_blocks(text), requests + change_requests(text)
        if not blocks:
            raise ShadError(
                f"the model wrote no files for {step} (its reply named no path on any code block)",
                hint="run again, or try another model with --model worker=MODEL_ID",
            )
        notes = tuple(
            f"[[{n[1][:-3] if str(n[1]).endswith('.md') else n[1]}]]" for n in node.retrieval.get("notes", [])
        )
        files = [
            ManifestFile.make(b.path, b.content, source_nodes=[node.id], source_notes=notes) for b in blocks
        ]
        calls = ctx.provider.since(mark, node.id, ("code",))
        cached = {
            "files": [
                {
                    "path": f.path,
                    "content": f.content,
                    "source_nodes": list(f.source_nodes),
                    "source_notes": list(f.source_notes),
                }
                for f in files
            ],
            "requests": requests,
            "calls": calls,
        }
        refs = [(str(n[0]), str(n[1]), str(n[2])) for n in node.retrieval.get("notes", [])]
        ctx.cache.save(key, cached, refs, verified=True)
        return files, requests

    async def ask(self, node: Node, purpose: str, prompt: str, inputs: dict[str, Any]) -> str:
        """One uncached model call (repairs: they depend on what the checks found just now)."""
        request = LLMRequest(
            purpose,
            Tier.WORKER,
            prompt,
            system=self.ctx.system_prompt(node),
            node_id=node.id,
            max_tokens=4000,
            inputs=inputs,
        )
        return (await self.calls.call(node, request)).text
