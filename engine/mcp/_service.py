"""What Shad's MCP tools do, without the protocol: search, read a note, run a goal, a run's status and
report, all confined to the vaults the server was started with. The server (``_server``) only maps
these onto MCP tools and resources; every refusal is a ``ShadError`` it turns into a tool error."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..config import RunConfig
from ..errors import ShadError, UsageError
from ..runs import Run, arun
from ..store.history import list_runs
from ..vault import Vault, VaultSet

__all__ = ["PROGRESS_KINDS", "SECRET_ENV", "ShadService", "redact"]

# Environment variables whose values never leave the server (results, errors, logs).
SECRET_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SHAD_API_TOKEN")
# Event types that end a node: each is one progress step.
PROGRESS_KINDS = frozenset(
    {"NODE_SUCCEEDED", "NODE_CACHE_HIT", "NODE_FAILED", "NODE_PRUNED", "NODE_FAILED_WITH_DIAGNOSTIC"}
)
PROVIDERS = ("offline", "anthropic", "openai", "claude-code")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

EventSink = Callable[[dict[str, Any]], None]


def redact(text: str) -> str:
    """``text`` with the value of every secret environment variable replaced."""
    for name in SECRET_ENV:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, f"<{name}>")
    return text


class ShadService:
    """Shad over a fixed set of vaults (first has priority). Nothing outside them is read or run."""

    def __init__(self, vaults: Sequence[str | os.PathLike[str]]) -> None:
        if not vaults:
            raise UsageError("no vaults given", hint="pass at least one --vault DIR")
        roots = []
        for v in vaults:
            root = Path(v).expanduser().resolve()
            if not root.is_dir():
                raise UsageError(f"vault folder not found: {root}", hint="pass an existing folder to --vault")
            roots.append(root)
        self.roots: list[Path] = roots
        self._vaults: VaultSet | None = None
        # The SDK runs sync tools in worker threads: one vault operation at a time (as engine.api does).
        self._lock = threading.RLock()

    # --- vaults -------------------------------------------------------------------------------------

    @property
    def vaults(self) -> VaultSet:
        """The served vaults, opened (and their indexes refreshed) on first use."""
        with self._lock:
            if self._vaults is None:
                self._vaults = VaultSet([Vault(r) for r in self.roots])
            return self._vaults

    def refresh(self) -> None:
        with self._lock:
            self.vaults.refresh()

    def vault_ids(self, names: Sequence[str] | None) -> list[str] | None:
        """The ids of the served vaults ``names`` designates (an id, a folder name or a path);
        None for all. Naming any other folder is an error."""
        if not names:
            return None
        out = []
        for name in names:
            out.append(self._one_vault(name).id)
        return out

    def _one_vault(self, name: str) -> Vault:
        for v in self.vaults.vaults:
            if name in (v.id, v.root.name):
                return v
        try:
            as_path = Path(name).expanduser().resolve()
        except (OSError, RuntimeError):
            as_path = None
        for v in self.vaults.vaults:
            if as_path is not None and as_path == v.root:
                return v
        raise UsageError(
            f"{name!r} is not one of the vaults this server serves",
            hint=f"served vaults: {', '.join(self.vaults.ids)}",
        )

    # --- tools --------------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        path: str | None = None,
        type: str | None = None,
        tag: Sequence[str] | None = None,
        vaults: Sequence[str] | None = None,
        where: dict[str, Any] | None = None,
        exclude: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Hits as ``shad vault search --json`` prints them; ``where`` filters by frontmatter fields,
        ``exclude`` leaves out folders."""
        if not query.strip():
            raise UsageError("the query is empty", hint="pass a few words to search for")
        if not 1 <= limit <= 1000:
            raise UsageError(f"limit must be between 1 and 1000, got {limit}")
        chosen = self.vault_ids(vaults)
        with self._lock:
            self.refresh()
            hits = self.vaults.search(
                query,
                limit=limit,
                path=path,
                type=type,
                tags=list(tag or ()) or None,
                where=where or None,
                vaults=chosen,
                exclude=tuple(exclude or ()),
            )
            return [h.to_dict() for h in hits]

    def read_note(self, path: str, vault: str | None = None) -> dict[str, Any]:
        """One note: path, title, frontmatter, body, links, tags, headings, backlinks (as
        ``shad vault note --json``)."""
        _check_note_path(path)
        chosen = self.vault_ids([vault] if vault else None)
        with self._lock:
            self.refresh()
            note = self.vaults.read_note(path, vault=chosen[0] if chosen else None)
            owner = self.vaults.get(note.vault or self.vaults.ids[0])
            return {**note.to_dict(), "backlinks": owner.backlinks(note.path)}

    def resolve_link(
        self, target: str, source: str | None = None, vault: str | None = None
    ) -> dict[str, str | None]:
        """``{"vault", "path"}`` of the note a wikilink target names (the first vault by priority that
        has one), or ``{"vault": None, "path": None}``."""
        if not target.strip() or len(target) > 1000:
            raise UsageError("the link target is empty or too long", hint="e.g. Roasting/First crack")
        chosen = self.vault_ids([vault] if vault else None)
        with self._lock:
            self.refresh()
            for v in [self.vaults.get(c) for c in chosen] if chosen else self.vaults.vaults:
                found = v.resolve_link(target, source)
                if found:
                    return {"vault": v.id, "path": found}
        return {"vault": None, "path": None}

    def list_notes(self, folder: str | None = None, vault: str | None = None) -> list[dict[str, str]]:
        if folder:
            _check_note_path(folder)
        chosen = self.vault_ids([vault] if vault else None)
        with self._lock:
            self.refresh()
            notes = self.vaults.list_notes(folder, vault=chosen[0] if chosen else None)
            return [{"vault": v, "path": p} for v, p in notes]

    async def run(
        self,
        goal: str,
        *,
        strategy: str | None = None,
        max_nodes: int | None = None,
        max_tokens: int | None = None,
        provider: str | None = None,
        vaults: Sequence[str] | None = None,
        on_event: EventSink | None = None,
    ) -> dict[str, Any]:
        """Run ``goal`` over the served vaults (or the ones named); the summary and the report text."""
        if provider is not None and provider not in PROVIDERS:
            raise UsageError(f"unknown provider {provider!r}", hint=f"one of: {', '.join(PROVIDERS)}")
        chosen = self.vault_ids(vaults)
        roots = [str(v.root) for v in self.vaults if chosen is None or v.id in chosen]
        options: dict[str, Any] = {"checkpoints": "pause"}
        if strategy:
            options["strategy"] = strategy
        if max_nodes is not None:
            options["max_nodes"] = max_nodes
        if max_tokens is not None:
            options["max_tokens"] = max_tokens
        run = await arun(goal, roots, provider=provider, on_event=on_event, **options)
        return {**self._summary(run), "report": run.report}

    def status(self, run_id: str) -> dict[str, Any]:
        """The ``shad status --json`` summary of a run over the served vaults."""
        return self._summary(self._load(run_id))

    def report(self, run_id: str) -> str:
        run = self._load(run_id)
        if not run.report:
            raise ShadError(f"run {run_id!r} has no report yet", hint=f"its status is {run.status.value}")
        return run.report

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """Recent runs whose history lies in a served vault, newest first."""
        out = []
        for info in list_runs(limit=max(limit * 5, limit)):
            if self._served_dir(Path(info["dir"])):
                out.append({k: info[k] for k in ("run_id", "status", "goal")})
            if len(out) >= limit:
                break
        return out

    # --- helpers ------------------------------------------------------------------------------------

    def _load(self, run_id: str) -> Run:
        if not _RUN_ID.match(run_id or ""):
            raise UsageError(f"not a run id: {run_id!r}", hint="`shad_run` returns the run_id")
        run = Run.load(run_id)
        if not self._served_run(run):
            raise UsageError(
                f"run {run_id!r} is not over the vaults this server serves",
                hint=f"served vaults: {', '.join(str(r) for r in self.roots)}",
            )
        return run

    def _served_dir(self, folder: Path) -> bool:
        try:
            folder = folder.resolve()
        except OSError:
            return False
        return any(folder.is_relative_to(root) for root in self.roots)

    def _served_run(self, run: Run) -> bool:
        if self._served_dir(run.history.dir):
            return True
        config: RunConfig | None = run.config  # None when the run's vaults have moved
        if config is None:
            return False
        return all(Path(v).expanduser().resolve() in self.roots for v in config.vaults)

    @staticmethod
    def _summary(run: Run) -> dict[str, Any]:
        summary = dict(run.summary) or {"run_id": run.id, "status": run.status.value}
        summary.setdefault("run_id", run.id)
        summary.setdefault("status", run.status.value)
        summary.setdefault("citations", run.citations)
        summary.setdefault("report_path", run.report_path)
        summary["history_dir"] = str(run.history.dir)
        return summary


def _check_note_path(path: str) -> None:
    """A vault-relative path: never absolute, never climbing out with ``..``."""
    p = path.replace("\\", "/")
    if not p.strip() or p.startswith("/") or re.match(r"^[A-Za-z]:", p) or ".." in p.split("/"):
        raise UsageError(
            f"{path!r} is not a path inside the served vaults",
            hint="paths are vault-relative, e.g. Roasting/First crack.md",
        )
