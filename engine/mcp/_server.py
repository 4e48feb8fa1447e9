"""``shad mcp serve``: Shad as an MCP server (the official ``mcp`` SDK's ``MCPServer``).

Tools ``shad_run``, ``shad_search``, ``shad_read_note``, ``shad_list_notes``, ``shad_status``; resources
``shad://runs`` (recent runs) and ``shad://runs/{run_id}/report`` (a run's markdown report). A run
reports one progress notification per finished node. Failures are tool errors carrying the
``ShadError`` message and hint, with every secret redacted; logging goes to stderr."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import sys
import threading
from collections.abc import Sequence
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import Field

from ..errors import ShadError
from ._service import PROGRESS_KINDS, ShadService, redact

__all__ = ["build_server", "serve"]

log = logging.getLogger("engine.mcp")

INSTRUCTIONS = (
    "Shad runs goals over Obsidian vaults and answers with reports whose every claim cites a note. "
    "shad_search and shad_read_note read the vaults; shad_run runs a goal (minutes with a model) and "
    "returns its summary and report; shad_status reads a run's summary again."
)


def _tool_error(exc: BaseException) -> Exception:
    if isinstance(exc, ShadError):
        text = exc.message + (f"\nhint: {exc.hint}" if exc.hint else "")
    else:
        text = f"{type(exc).__name__}: {exc}"
        log.warning("unexpected error in a tool: %s", redact(text))  # stderr, never stdout
    return ToolError(redact(text))


def build_server(vaults: Sequence[str | os.PathLike[str]], *, name: str = "shad") -> MCPServer:
    """An ``MCPServer`` over ``vaults`` (the only folders its tools may read or run over)."""
    service = ShadService(vaults)
    server: MCPServer = MCPServer(name=name, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(
        name="shad_search",
        description="Ranked full-text search of the vaults (as `shad vault search --json`).",
    )
    def shad_search(
        query: Annotated[str, Field(description='Plain words; "phrases", prefix* and -excluded work.')],
        limit: Annotated[int, Field(ge=1, le=1000, description="Hits to return.")] = 10,
        path: Annotated[str | None, Field(description="Only notes under this folder or note.")] = None,
        type: Annotated[str | None, Field(description="Only notes whose frontmatter `type` is this.")] = None,
        tag: Annotated[list[str] | None, Field(description="Only notes with all these tags.")] = None,
        vault: Annotated[str | None, Field(description="One served vault (id or path); default all.")] = None,
        where: Annotated[
            dict[str, Any] | None, Field(description="Only notes whose frontmatter has these values.")
        ] = None,
        exclude: Annotated[
            list[str] | None, Field(description="Leave out notes under these folders.")
        ] = None,
    ) -> list[dict[str, Any]]:
        try:
            return service.search(
                query,
                limit=limit,
                path=path,
                type=type,
                tag=tag,
                vaults=[vault] if vault else None,
                where=where,
                exclude=exclude,
            )
        except Exception as exc:
            raise _tool_error(exc) from None

    @server.tool(
        name="shad_read_note",
        description="One note: frontmatter, body, links (resolved), tags, headings, backlinks.",
    )
    def shad_read_note(
        path: Annotated[
            str,
            Field(
                description="Vault-relative path (e.g. Roasting/First crack.md), or the note's name as a "
                "wikilink names it (First crack); a name two notes share is refused with both paths"
            ),
        ],
        vault: Annotated[
            str | None, Field(description="One served vault (id or path); default by priority.")
        ] = None,
    ) -> dict[str, Any]:
        try:
            return service.read_note(path, vault)
        except Exception as exc:
            raise _tool_error(exc) from None

    @server.tool(
        name="shad_resolve_link",
        description="Where a wikilink target leads, by Obsidian's rules (exact path, then a unique name or "
        "alias): the note's vault and path, or null path when no note matches.",
    )
    def shad_resolve_link(
        target: Annotated[str, Field(description="A link target, no brackets, e.g. Roasting/First crack")],
        source: Annotated[str | None, Field(description="The linking note's path (breaks ties).")] = None,
        vault: Annotated[str | None, Field(description="One served vault (id or path); default all.")] = None,
    ) -> dict[str, str | None]:
        try:
            return service.resolve_link(target, source, vault)
        except Exception as exc:
            raise _tool_error(exc) from None

    @server.tool(
        name="shad_list_notes", description="The notes of the vaults (or of one folder), as vault and path."
    )
    def shad_list_notes(
        folder: Annotated[
            str | None, Field(description="Only notes under this vault-relative folder.")
        ] = None,
        vault: Annotated[str | None, Field(description="One served vault (id or path); default all.")] = None,
    ) -> list[dict[str, str]]:
        try:
            return service.list_notes(folder, vault)
        except Exception as exc:
            raise _tool_error(exc) from None

    @server.tool(
        name="shad_run",
        description="Run GOAL over the vaults: decompose, retrieve, answer, verify, synthesize a cited "
        "report. "
        "Returns the run's summary (status, run_id, citations, report_path, metrics) and its report text; "
        "sends a progress notification per finished node.",
    )
    async def shad_run(
        goal: Annotated[str, Field(description="What to find out or produce.")],
        ctx: Context,
        strategy: Annotated[
            str | None, Field(description="software, research, analysis, planning or creative.")
        ] = None,
        max_nodes: Annotated[int | None, Field(ge=1, description="At most this many DAG nodes.")] = None,
        max_tokens: Annotated[int | None, Field(ge=1, description="At most this many model tokens.")] = None,
        provider: Annotated[
            str | None,
            Field(description="offline, anthropic, openai or claude-code (default: from the environment)."),
        ] = None,
        vaults: Annotated[
            list[str] | None, Field(description="Served vaults to run over; default all.")
        ] = None,
    ) -> dict[str, Any]:
        progress = _Progress(ctx)
        try:
            return await service.run(
                goal,
                strategy=strategy,
                max_nodes=max_nodes,
                max_tokens=max_tokens,
                provider=provider,
                vaults=vaults,
                on_event=progress.on_event,
            )
        except Exception as exc:
            raise _tool_error(exc) from None
        finally:
            await progress.drain()

    @server.tool(name="shad_status", description="A run's summary (as `shad status RUN_ID --json`).")
    def shad_status(
        run_id: Annotated[str, Field(description="The run_id shad_run returned.")],
    ) -> dict[str, Any]:
        try:
            return service.status(run_id)
        except Exception as exc:
            raise _tool_error(exc) from None

    @server.resource(
        "shad://runs",
        name="runs",
        description="Recent runs over the served vaults.",
        mime_type="application/json",
    )
    def runs_resource() -> str:
        return json.dumps(service.runs(), ensure_ascii=False)

    @server.resource(
        "shad://runs/{run_id}/report",
        name="run_report",
        description="A run's cited report.",
        mime_type="text/markdown",
    )
    def report_resource(run_id: str) -> str:
        try:
            return redact(service.report(run_id))
        except Exception as exc:
            raise ResourceError(str(_tool_error(exc))) from None

    return server


class _Progress:
    """Turns a run's event records (a sync callback, called in the server's loop or in a worker thread)
    into MCP progress notifications: one per finished node, the total being the nodes created so far."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.loop = asyncio.get_running_loop()
        self.lock = threading.Lock()
        self.done = 0
        self.total = 0
        self.sent: list[concurrent.futures.Future[None]] = []

    def on_event(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        with self.lock:
            if kind == "NODE_CREATED":
                self.total += 1
                return
            if kind not in PROGRESS_KINDS:
                return
            self.done += 1
            done, total = float(self.done), float(max(self.total, self.done))
            message = f"{record.get('node', '?')} {str(kind).removeprefix('NODE_').lower()}"
            # in order: the loop runs what is handed to it first, first
            self.sent.append(asyncio.run_coroutine_threadsafe(self._send(done, total, message), self.loop))

    async def _send(self, done: float, total: float, message: str) -> None:
        try:
            await self.ctx.report_progress(done, total, message)
        except Exception as exc:  # a client gone away must not fail the run
            log.debug("progress notification not sent: %s", exc)

    async def drain(self) -> None:
        if self.sent:
            await asyncio.gather(*(asyncio.wrap_future(f) for f in self.sent), return_exceptions=True)


def serve(
    vaults: Sequence[str | os.PathLike[str]], *, http_port: int | None = None, host: str = "127.0.0.1"
) -> None:
    """Serve over stdio, or over streamable HTTP on ``host:http_port`` (``/mcp``)."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    server = build_server(vaults)
    if http_port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=http_port)
