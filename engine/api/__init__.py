"""Shad over HTTP (issue 15, I5): a FastAPI app over the same arun/resume and typed events.

``create_app(Settings(token=..., vaults=[...]))`` is the whole server; ``shad serve`` runs it with uvicorn.
Runs are asyncio tasks in the server's loop, each streaming its event records (the records of
``events.jsonl``) to SSE subscribers; human-in-the-loop routes answer checkpoints and approvals as the
CLI does. FastAPI is an optional extra (``shad[server]``): importing this package needs it.
"""

from __future__ import annotations

from ._app import create_app
from ._runs import RunManager, summary_event
from ._security import MAX_BODY, ApiError, Settings, is_loopback

__all__ = ["MAX_BODY", "ApiError", "RunManager", "Settings", "create_app", "is_loopback", "summary_event"]
