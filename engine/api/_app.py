"""The FastAPI app: routes over the run manager, the vaults and the HITL queue, and the JSON error shape
``{"error": {"type", "message", "hint"}}`` for everything that goes wrong."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .._version import __version__
from ..curation import AlreadyDecidedError
from ..errors import ShadError
from ..runs import Run
from ..runs.dag import NodeStatus
from ..store.history import RunNotFoundError, list_runs
from . import _hitl
from ._models import DecideRequest, ResumeRequest, RunRequest, resume_options, run_config
from ._runs import LiveRun, RunManager
from ._security import ApiError, BodyLimit, Settings, error_body
from ._vaults import VaultPool

__all__ = ["create_app"]

log = logging.getLogger("shad.api")
RUN_ID = re.compile(r"[0-9A-Za-z][\w-]{0,80}")
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def create_app(settings: Settings | None = None) -> FastAPI:
    """The app for ``settings`` (the token, the vaults requests may name, the body limit)."""
    settings = settings or Settings()
    clean = settings.clean
    manager = RunManager(settings.clean)

    class CleanJSON(JSONResponse):
        """JSON without the token or any key the environment holds (a goal may quote one)."""

        def render(self, content: Any) -> bytes:
            return clean(super().render(content).decode("utf-8")).encode("utf-8")

    pool = VaultPool(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await manager.close()

    app = FastAPI(
        title="Shad",
        version=__version__,
        description="Runs goals over Obsidian vaults: the same engine as the `shad` CLI. Every route but "
        "/v1/health and /openapi.json needs `Authorization: Bearer TOKEN` when the server has a token.",
        default_response_class=CleanJSON,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.settings, app.state.manager, app.state.pool = settings, manager, pool
    _errors(app, settings)

    def run_of(run_id: str) -> Run:
        if not RUN_ID.fullmatch(run_id):  # an id, never a path (find_run would take a folder's path)
            raise ApiError(404, "NotFound", f"no run {run_id!r} found", hint="GET /v1/runs lists them")
        run = Run.load(run_id)
        if run.config is None or not settings.allows_run(run.config.vaults):
            raise ApiError(403, "Forbidden", f"run {run_id} is not over this server's vaults")
        return run

    def known(run_id: str) -> str:
        """A run this server started (its history may not exist yet), or one over its vaults."""
        return run_id if run_id in manager.live else run_of(run_id).id

    def accepted(request: Request, live: LiveRun) -> Response:
        if "text/event-stream" in request.headers.get("accept", ""):
            headers = {**SSE_HEADERS, "X-Shad-Run-Id": live.run_id}
            return StreamingResponse(
                manager.stream(live.run_id), media_type="text/event-stream", headers=headers
            )
        return CleanJSON(
            {
                "run_id": live.run_id,
                "status_url": f"/v1/run/{live.run_id}",
                "events_url": f"/v1/run/{live.run_id}/events",
            },
            status_code=202,
        )

    @app.get("/v1/health", tags=["server"])
    async def health() -> dict[str, Any]:
        """Is the server up (no token needed)."""
        return {"status": "ok", "version": __version__, "runs_in_progress": len(manager.running())}

    @app.post("/v1/run", status_code=202, tags=["runs"])
    async def start(body: RunRequest, request: Request) -> Response:
        """Start a run: 202 with its id, or with `Accept: text/event-stream` its events as they happen,
        closed by `event: summary` ({status, report_path, citations})."""
        config = run_config(body, settings.vaults_of(body.vaults))
        return accepted(request, manager.start(config))

    @app.get("/v1/run/{run_id}", tags=["runs"])
    async def status(run_id: str) -> dict[str, Any]:
        """The run's summary (`shad status --json`)."""
        live = manager.live.get(run_id)
        if live is not None and live.running:
            return {"run_id": run_id, "status": "RUNNING"}
        run = run_of(run_id)
        return run.summary or {
            "run_id": run.id,
            "status": run.status.value,
            "history_dir": str(run.history.dir),
        }

    @app.post("/v1/run/{run_id}/resume", status_code=202, tags=["runs"])
    async def resume(run_id: str, request: Request, body: ResumeRequest | None = None) -> Response:
        """Continue a stopped run in its own history (the options of `shad resume`; `hint` steers the
        nodes whose retries ran out). 409 when a hint has no such node to steer."""
        run = run_of(run_id)
        assert run.config is not None
        options = resume_options(body or ResumeRequest(), run.config.budgets.max_tokens)
        if options["hint"] and not any(n.status is NodeStatus.FAILED_WITH_DIAGNOSTIC for n in run.dag):
            # Refused here, not in the run's task: the client hears it, and nothing starts.
            raise ApiError(
                409,
                "Conflict",
                f"run {run.id} has no node whose retries ran out: hint is for those",
                hint="to steer a node waiting at a checkpoint: POST /v1/hitl/{id}/decide with action hint "
                "(GET /v1/hitl/queue)",
            )
        return accepted(request, manager.resume(run.id, **options))

    @app.get("/v1/runs", tags=["runs"])
    async def runs(limit: Annotated[int, Query(ge=1, le=1000)] = 20) -> list[dict[str, Any]]:
        """Recent runs over the server's vaults, newest first (`shad runs --json`)."""
        found = []
        for info in list_runs(max(limit * 5, 100)):
            folder = Path(info["dir"]).resolve()
            if any(folder.is_relative_to(root) for root in settings.roots):
                live = manager.live.get(info["run_id"])
                if live is not None and live.running:
                    info["status"] = "RUNNING"
                info.pop("dir", None)
                found.append(info)
        return found[:limit]

    @app.get("/v1/run/{run_id}/events", tags=["runs"], response_class=StreamingResponse)
    async def events(run_id: str) -> StreamingResponse:
        """Server-sent events: the run's history, then live records, then `event: summary`."""
        return StreamingResponse(
            manager.stream(known(run_id)), media_type="text/event-stream", headers=SSE_HEADERS
        )

    @app.delete("/v1/run/{run_id}", tags=["runs"])
    async def cancel(run_id: str) -> dict[str, Any]:
        """Cancel a running run: it ends PARTIAL with its report, and resumes like any stopped run."""
        run_id = known(run_id)
        if not await manager.cancel(run_id):
            raise ApiError(409, "Conflict", f"run {run_id} is not running", hint="GET /v1/run/{id} says why")
        final = manager.live[run_id].final or {}
        return {
            "run_id": run_id,
            "status": final.get("status", "PARTIAL"),
            "resume_url": f"/v1/run/{run_id}/resume",
        }

    @app.get("/v1/vault/status", tags=["vaults"])
    def vault_status(vault: Annotated[list[str] | None, Query()] = None) -> Any:
        """Notes, links, problems and sync conflicts (`shad vault status --json`)."""
        statuses = pool.status(settings.vaults_of(vault))
        return statuses[0] if len(statuses) == 1 else statuses

    @app.get("/v1/vault/search", tags=["vaults"])
    def vault_search(
        q: Annotated[str, Query(min_length=1, max_length=2000)],
        vault: Annotated[list[str] | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 10,
        path: Annotated[str | None, Query(max_length=1000)] = None,
        type: Annotated[str | None, Query(max_length=200)] = None,
        tag: Annotated[list[str] | None, Query()] = None,
    ) -> list[dict[str, Any]]:
        """Ranked full-text search (the JSON of `shad vault search --json`)."""
        return pool.search(settings.vaults_of(vault), q, limit=limit, path=path, type=type, tags=tag)

    @app.get("/v1/skills", tags=["skills"])
    def skills_list(
        vault: Annotated[list[str] | None, Query()] = None,
        goal: Annotated[str | None, Query(min_length=1, max_length=2000)] = None,
    ) -> dict[str, Any]:
        """The skills in force over the vaults (`shad skills ls --json`); with `goal`, also which of
        them the goal would use (`shad skills route --json`)."""
        from ..skills import discover, route

        found = discover(settings.vaults_of(vault))
        listing = found.to_dict()
        if goal is not None:
            listing["routing"] = route(goal, found).to_dict()
        return listing

    @app.get("/v1/hitl/queue", tags=["hitl"])
    def hitl_queue() -> dict[str, Any]:
        """Open checkpoints of runs over the server's vaults, and pending approvals."""
        return {"items": _hitl.queue(settings)}

    @app.post("/v1/hitl/{item_id}/decide", tags=["hitl"])
    async def hitl_decide(item_id: str, body: DecideRequest, request: Request) -> Response:
        """Decide a queue item. A checkpoint decision resumes its run as `shad checkpoint` does (202,
        or its events with `Accept: text/event-stream`); an approval is approved or rejected."""
        kind, first, node_id = _hitl.parse_id(item_id)
        if kind == "approval":
            done = _hitl.decide_approval(settings, int(first), body.action, body.decision_text())
            return CleanJSON({"id": item_id, "approval": done})
        if body.action == "reject":
            raise ApiError(422, "UsageError", "a checkpoint is approved, edited, hinted, skipped or stopped")
        live = manager.live.get(first)
        if live is not None and live.running:
            raise ApiError(409, "Conflict", f"run {first} is still running", hint="decide once it has paused")
        decided = _hitl.decide_checkpoint(settings, first, node_id, body.action, body.decision_text())
        if not body.resume:
            return CleanJSON({"id": item_id, "checkpoint": decided, "resumed": False})
        return accepted(request, manager.resume(first))

    app.add_middleware(BodyLimit, settings=settings)
    _document_auth(app)
    return app


def _document_auth(app: FastAPI) -> None:
    """The schema says what the middleware enforces: a bearer token on every route but the health check."""
    from fastapi.openapi.utils import get_openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer"}
            }
            for path, operations in schema["paths"].items():
                if path != "/v1/health":
                    for operation in operations.values():
                        operation["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _errors(app: FastAPI, settings: Settings) -> None:
    def reply(status: int, kind: str, message: str, hint: str | None = None) -> Response:
        return Response(error_body(kind, message, hint, settings), status, media_type="application/json")

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        return reply(exc.status, exc.kind, exc.message, exc.hint)

    @app.exception_handler(ShadError)
    async def shad_error(request: Request, exc: ShadError) -> Response:
        if isinstance(exc, RunNotFoundError):  # its hint names the CLI's `shad runs`
            return reply(404, "NotFound", exc.message, "GET /v1/runs lists them")
        status = 409 if isinstance(exc, AlreadyDecidedError) else 400
        return reply(status, type(exc).__name__, exc.message, exc.hint)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        problems = []
        for e in exc.errors()[:10]:
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
            problems.append(f"{where}: {e.get('msg', 'invalid')}" if where else str(e.get("msg", "invalid")))
        return reply(422, "ValidationError", "; ".join(problems) or "invalid request", "see /openapi.json")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        kinds = {404: "NotFound", 405: "MethodNotAllowed", 401: "Unauthorized", 403: "Forbidden"}
        return reply(exc.status_code, kinds.get(exc.status_code, "HTTPError"), str(exc.detail))

    @app.exception_handler(Exception)
    async def crash(request: Request, exc: Exception) -> Response:
        log.error(
            "internal error on %s: %s", request.url.path, settings.clean(f"{type(exc).__name__}: {exc}")
        )
        return reply(500, "InternalError", "the server failed on this request", "the server log says why")
