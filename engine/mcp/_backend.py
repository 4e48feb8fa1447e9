"""The MCP client backend (V7): a read-only vault whose notes come from an MCP server instead of a folder.

``McpVault`` speaks to the server with the official SDK's client (a subprocess over stdio, or a
streamable-HTTP URL) from a private event-loop thread, and offers the read side of ``engine.vault.Vault``
synchronously: ``list_notes``, ``read_note`` (a ``Note``), ``search`` (``Hit`` objects),
``backlinks``, ``neighbors``, ``get_frontmatter``, ``content_hashes``, ``status``. The server must offer
Shad's own tools (``shad_list_notes``, ``shad_read_note``, ``shad_search``: ``shad mcp serve`` is such a
server). ``open_mcp_vault("mcp:COMMAND")`` / ``open_mcp_vault("mcp:http://...")`` is the ``mcp:`` vault
backend (the ``shad.vault_backends`` entry point): ``shad run --backend mcp:...``, ``--vault mcp:...``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import tempfile
import threading
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import fields
from typing import Any
from urllib.parse import urlsplit

from ..config import HISTORY_FOLDER, is_loopback, refuse_offline
from ..errors import NoteNotFoundError, ShadError, UsageError
from ..vault import Diagnostic, Heading, Hit, Link, Note

__all__ = ["REQUIRED_TOOLS", "McpBackendError", "McpVault", "note_from_dict", "open_mcp_vault"]

REQUIRED_TOOLS = ("shad_list_notes", "shad_read_note", "shad_search")
# Passed on to a stdio server on top of the SDK's safe default environment (never a model key).
PASSED_ENV = ("SHAD_HOME", "SHAD_STORE", "PYTHONPATH")


class McpBackendError(ShadError):
    """The MCP server could not be reached, or it answered with an error."""


def note_from_dict(data: dict[str, Any]) -> Note:
    """A ``Note`` from ``Note.to_dict()`` (what ``shad_read_note`` returns)."""
    link_fields = {f.name for f in fields(Link)}
    return Note(
        path=data["path"],
        title=data.get("title") or data["path"].rsplit("/", 1)[-1].removesuffix(".md"),
        frontmatter=dict(data.get("frontmatter") or {}),
        body=data.get("body", ""),
        links=[Link(**{k: v for k, v in link.items() if k in link_fields}) for link in data.get("links", [])],
        tags=list(data.get("tags", [])),
        headings=[Heading(**h) for h in data.get("headings", [])],
        aliases=list(data.get("aliases", [])),
        blocks=dict(data.get("blocks") or {}),
        hash=str(data.get("hash", "")),
        mtime=float(data.get("mtime") or 0.0),
        size=int(data.get("size") or 0),
        diagnostics=[Diagnostic(**d) for d in data.get("diagnostics", [])],
        vault=data.get("vault"),
    )


def _payload(result: Any) -> Any:
    """The JSON a tool returned: its structured content (unwrapped from ``{"result": ...}``), else its
    text content parsed."""
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return structured["result"] if set(structured) == {"result"} else structured
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    if len(texts) == 1:
        return json.loads(texts[0])
    return [json.loads(t) for t in texts]


def _leaf(exc: BaseException | None) -> BaseException | None:
    """The first error inside (nested) exception groups: what went wrong, not the task group."""
    inner = getattr(exc, "exceptions", None)  # an ExceptionGroup (Python 3.11+, or anyio's backport)
    while isinstance(inner, tuple) and inner and all(isinstance(e, BaseException) for e in inner):
        exc = next((e for e in inner if isinstance(e, ShadError)), inner[0])
        inner = getattr(exc, "exceptions", None)
    return exc


class McpVault:
    """A read-only vault served by an MCP server. ``command`` starts the server (a string is split as a
    shell would); ``url`` names a streamable-HTTP endpoint instead. ``remote_vault`` picks one of the
    server's vaults (default: all of them, in its priority order). Use as a context manager, or
    ``close()`` it."""

    read_only = True
    root = None  # no folder to look into: everything goes through the server

    def __init__(
        self,
        command: str | Sequence[str] | None = None,
        *,
        url: str | None = None,
        id: str | None = None,
        remote_vault: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60.0,
        include_history: bool = False,
    ) -> None:
        if (command is None) == (url is None):
            raise UsageError(
                "an MCP vault needs a command or a URL (not both)", hint="e.g. mcp:shad mcp serve ..."
            )
        argv = shlex.split(command) if isinstance(command, str) else list(command or ())
        if command is not None and not argv:
            raise UsageError(
                "the MCP server command is empty", hint="e.g. mcp:shad mcp serve --vault ~/Notes"
            )
        self.argv = argv
        self.url = url
        self.id = id or "mcp"
        self.remote_vault = remote_vault
        self.timeout = timeout
        # Run histories inside the served vault are not sources unless asked for (as for a folder).
        self.hidden: tuple[str, ...] = () if include_history else (HISTORY_FOLDER,)
        self.params: dict[str, set[str]] = {}  # each tool's argument names, as the server declares them
        self._resolved: dict[tuple[str, str | None], str | None] = {}  # link targets, once per vault object
        self._env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ} | (env or {})
        self._session: Any = None
        self._errlog: Any = None  # the stdio server's stderr (a temporary file)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.server_name = ""
        self.tools: list[str] = []
        self._thread = threading.Thread(target=self._thread_main, name=f"mcp-vault-{self.id}", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            self.close()
            raise McpBackendError(f"the MCP server did not answer within {timeout:.0f}s", hint=self._where())
        error = _leaf(self._take_error())
        if error is not None:
            self.close()
            if isinstance(error, ShadError):
                raise error
            raise McpBackendError(
                f"could not connect to the MCP server: {error}", hint=self._where()
            ) from error

    def _take_error(self) -> BaseException | None:
        error, self._error = self._error, None
        return error

    def __repr__(self) -> str:
        return f"McpVault({self.id!r}, {self._where()})"

    def __enter__(self) -> McpVault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _where(self) -> str:
        return self.url or shlex.join(self.argv)

    @property
    def location(self) -> str:
        """The vault's stable name (keys its cache entries and its run histories' records)."""
        return f"mcp:{self._where()}"

    # --- the connection (in its own thread and loop) ----------------------------------------------------

    def _thread_main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported to the caller, never lost
            if not self._ready.is_set():
                self._error = exc
                if isinstance(exc, ImportError) and exc.name and exc.name.split(".")[0] == "mcp":
                    self._error = McpBackendError(
                        "reading a vault through MCP needs the mcp package", hint="pip install 'shad[mcp]'"
                    )
        finally:
            self._ready.set()

    def _transport(self) -> Any:
        if self.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(self.url)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=self.argv[0], args=self.argv[1:], env=self._env)
        # The server's stderr goes to a real file: sys.stderr may be a stream with no file descriptor
        # (a notebook, pytest), which a subprocess cannot write to.
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115 (closed in close())
        return stdio_client(params, errlog=self._errlog)

    async def _serve(self) -> None:
        from mcp.client.session import ClientSession

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport())
            session = await stack.enter_async_context(ClientSession(read, write))
            init = await session.initialize()
            self.server_name = getattr(getattr(init, "server_info", None), "name", "") or ""
            listed = (await session.list_tools()).tools
            self.tools = [t.name for t in listed]
            self.params = {t.name: set((t.input_schema or {}).get("properties") or ()) for t in listed}
            missing = [t for t in REQUIRED_TOOLS if t not in self.tools]
            if missing:
                raise McpBackendError(
                    f"the MCP server {self.server_name or self._where()!r} lacks the tools "
                    f"{', '.join(missing)}",
                    hint=f"it offers: {', '.join(self.tools) or 'no tools'}; serve the vault with "
                    "`shad mcp serve --vault DIR`",
                )
            self._session = session
            self._ready.set()
            await self._stop.wait()

    def close(self) -> None:
        """End the session (and the server subprocess, for a command)."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop has just closed
                loop.call_soon_threadsafe(stop.set)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)
        self._session = None
        errlog, self._errlog = self._errlog, None
        if errlog is not None:
            errlog.close()

    def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        session, loop = self._session, self._loop
        if session is None or loop is None or not self._thread.is_alive():
            raise McpBackendError("the MCP vault is closed", hint=self._where())
        args = {k: v for k, v in arguments.items() if v is not None}
        if self.remote_vault is not None:
            args.setdefault("vault", self.remote_vault)
        future = asyncio.run_coroutine_threadsafe(session.call_tool(tool, args), loop)
        try:
            result = future.result(self.timeout)
        except TimeoutError as exc:
            future.cancel()
            raise McpBackendError(f"{tool} took longer than {self.timeout:.0f}s", hint=self._where()) from exc
        except Exception as exc:
            raise McpBackendError(f"{tool} failed: {exc}", hint=self._where()) from exc
        if result.is_error:
            text = "\n".join(getattr(c, "text", "") for c in result.content).strip()
            message, _, hint = text.partition("\nhint: ")
            error = NoteNotFoundError if tool == "shad_read_note" else McpBackendError
            raise error(message or f"{tool} failed", hint=hint or None)
        return _payload(result)

    # --- the read side of a Vault --------------------------------------------------------------------

    def refresh(self, progress: Any = None) -> dict[str, Any]:
        """Nothing to index here: the server keeps its own index fresh."""
        return {"vault": self.id, "backend": "mcp"}

    def list_notes(self, folder: str | None = None, recursive: bool = True) -> list[str]:
        rows = self._call("shad_list_notes", {"folder": folder})
        paths = [str(r["path"]) for r in rows]
        if not recursive:
            prefix = (folder.strip("/") + "/") if folder else ""
            paths = [p for p in paths if "/" not in p[len(prefix) :]]
        return list(dict.fromkeys(paths))

    def read_note(self, path: str) -> Note:
        note = note_from_dict(self._call("shad_read_note", {"path": path}))
        note.vault = self.id
        return note

    def resolve_link(self, target: str, source: str | None = None) -> str | None:
        """The path a wikilink target leads to: the server resolves it (``shad_resolve_link``); a server
        without that tool gets an exact path, then a unique note name, matched against its listing."""
        key = (target, source)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(target, source)
        return self._resolved[key]

    def _resolve(self, target: str, source: str | None) -> str | None:
        if "shad_resolve_link" in self.tools:
            found = self._call("shad_resolve_link", {"target": target, "source": source}).get("path")
            return str(found) if found else None
        wanted = target.split("#", 1)[0].split("|", 1)[0].strip().strip("/")
        wanted = wanted if wanted.lower().endswith(".md") else f"{wanted}.md"
        paths = self.list_notes()
        if wanted in paths:
            return wanted
        name = wanted.rsplit("/", 1)[-1].casefold()
        by_name = [p for p in paths if p.rsplit("/", 1)[-1].casefold() == name]
        return by_name[0] if len(by_name) == 1 else None

    def backlinks(self, path: str) -> list[str]:
        """The notes linking to ``path`` (resolved by the server)."""
        return [str(p) for p in self._call("shad_read_note", {"path": path}).get("backlinks", [])]

    def conflict_copies(self) -> list[dict[str, str | None]]:
        """Sync-conflict copies are the server's business: none are reported here."""
        return []

    def get_frontmatter(self, path: str) -> dict[str, Any]:
        return self.read_note(path).frontmatter

    def content_hashes(self, paths: list[str]) -> dict[str, str]:
        out = {}
        for path in paths:
            try:
                out[path] = self.read_note(path).hash
            except NoteNotFoundError:
                continue
        return out

    def neighbors(self, path: str, depth: int = 1) -> list[str]:
        """Notes within ``depth`` links of ``path``, either direction (as ``Vault.neighbors``), walked
        one server read per note."""
        start = self.read_note(path).path
        seen, frontier = {start}, [start]
        for _ in range(max(0, depth)):
            step: list[str] = []
            for current in frontier:
                data = self._call("shad_read_note", {"path": current})
                linked = [str(lk.get("resolved")) for lk in data.get("links", []) if lk.get("resolved")]
                for other in [*linked, *map(str, data.get("backlinks", []))]:
                    if other not in seen and other.lower().endswith(".md"):  # notes, not attachments
                        seen.add(other)
                        step.append(other)
            frontier = step
        return sorted(seen - {start})

    def search(
        self,
        query: str,
        limit: int = 10,
        path: str | None = None,
        type: str | None = None,
        tags: str | list[str] | None = None,
        where: dict[str, Any] | None = None,
        *,
        exclude: Sequence[str] = (),
        include_conflicts: bool = False,
        **filters: Any,
    ) -> list[Hit]:
        """Ranked search by the server. ``exclude`` (folders) and ``where`` (frontmatter values) are
        passed on when the server takes them; a server that does not gets ``exclude`` applied here."""
        accepts = self.params.get("shad_search", set())
        unsupported = sorted(k for k, v in filters.items() if v) + (
            ["where"] if where and "where" not in accepts else []
        )
        if unsupported:
            raise UsageError(
                f"this MCP vault cannot filter search by {', '.join(unsupported)}",
                hint="filter by path, type or tag",
            )
        hidden = tuple(dict.fromkeys([*exclude, *self.hidden]))
        tag_list = [tags] if isinstance(tags, str) else list(tags or ()) or None
        arguments: dict[str, Any] = {"query": query, "limit": limit, "path": path, "type": type}
        arguments["tag"] = tag_list
        if where:
            arguments["where"] = where
        remote_exclude = "exclude" in accepts
        if hidden and remote_exclude:
            arguments["exclude"] = list(hidden)
        elif hidden:
            arguments["limit"] = min(1000, limit * 3 + 10)  # room for the hits left out below
        rows = self._call("shad_search", arguments)
        hit_fields = {f.name for f in fields(Hit)}
        hits = [Hit(**{k: v for k, v in row.items() if k in hit_fields}) for row in rows]
        if hidden and not remote_exclude:
            prefixes = tuple(h.strip("/") + "/" for h in hidden)
            hits = [h for h in hits if not h.path.startswith(prefixes)]
        for hit in hits:
            hit.vault = self.id
        return hits[:limit]

    def status(self) -> dict[str, Any]:
        return {
            "vault": self.id,
            "backend": "mcp",
            "server": self.server_name,
            "source": self._where(),
            "notes": len(self.list_notes()),
        }


def open_mcp_vault(spec: str, **kwargs: Any) -> McpVault:  # the ``mcp:`` vault backend
    """The vault a ``--backend`` value names: ``mcp:COMMAND ARGS...`` (a server started over stdio) or
    ``mcp:http://HOST:PORT/mcp`` (streamable HTTP)."""
    scheme, sep, rest = spec.partition(":")
    if scheme != "mcp" or not sep or not rest.strip():
        raise UsageError(
            f"not an MCP backend: {spec!r}",
            hint="mcp:COMMAND (e.g. mcp:shad mcp serve --vault ~/Notes) or mcp:http://127.0.0.1:8000/mcp",
        )
    rest = rest.strip()
    if rest.startswith(("http://", "https://")):
        host = urlsplit(rest).hostname or ""
        if not is_loopback(host):
            refuse_offline(f"the MCP server at {host}")  # only when SHAD_OFFLINE is on
        return McpVault(url=rest, **kwargs)
    return McpVault(rest, **kwargs)
