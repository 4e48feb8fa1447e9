"""``shad serve``: the engine over HTTP (``engine.api``) with uvicorn. FastAPI and uvicorn load only when
the server starts, so ``shad --help`` stays instant."""

from __future__ import annotations

import os

import click

from ..errors import UsageError

__all__ = ["serve_cmd"]


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    metavar="TOKEN",
    help="Bearer token every route but /v1/health needs (default: $SHAD_API_TOKEN).",
)
@click.option(
    "--vault", "vaults", multiple=True, metavar="DIR", help="A vault requests may name (repeatable)."
)
@click.option("--max-body", type=click.IntRange(1024), default=1_000_000, show_default=True, help="Bytes.")
@click.option("--log-level", default="info", show_default=True, help="uvicorn's log level.")
def serve_cmd(
    host: str, port: int, token: str | None, vaults: tuple[str, ...], max_body: int, log_level: str
) -> int:
    """Serve the engine over HTTP: runs with live events (SSE), vault search, checkpoints and approvals.

    Requests may name only the vaults given with --vault. Binding anything but a loopback address
    needs a token (--token or SHAD_API_TOKEN).
    """
    from ..api import Settings, create_app, is_loopback

    token = token or os.environ.get("SHAD_API_TOKEN") or None
    if not is_loopback(host) and not token:
        raise UsageError(
            f"refusing to serve on {host} without a token",
            hint="pass --token TOKEN (or set SHAD_API_TOKEN), or bind 127.0.0.1",
        )
    if not vaults:
        click.echo("shad serve: no --vault given: runs and searches will be refused (403)", err=True)
    import uvicorn

    app = create_app(Settings(token=token, vaults=vaults, max_body=max_body))
    auth = "token required" if token else "no token (loopback only)"
    click.echo(f"shad serve on http://{host}:{port} ({auth}; {len(vaults)} vault(s))", err=True)
    # Open event streams end when their runs do; on shutdown, wait a little for them, then cancel the runs
    # (each ends PARTIAL and resumable).
    uvicorn.run(
        app, host=host, port=port, log_level=log_level, server_header=False, timeout_graceful_shutdown=5
    )
    return 0
