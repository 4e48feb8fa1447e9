"""``shad mcp``: Shad as an MCP server. The ``mcp`` SDK is imported only when a command runs."""

from __future__ import annotations

import click

from ..errors import UsageError

__all__ = ["mcp_group"]


@click.group("mcp")
def mcp_group() -> None:
    """Shad as an MCP server (stdio or streamable HTTP)."""


@mcp_group.command("serve")
@click.option(
    "--vault",
    "vaults",
    multiple=True,
    required=True,
    metavar="DIR",
    help="Vault folder the tools may read and run over; repeat for layered vaults (first has priority).",
)
@click.option(
    "--http",
    "http_port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="Serve streamable HTTP on this port (path /mcp) instead of stdio.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address for --http (loopback only).")
def serve_cmd(vaults: tuple[str, ...], http_port: int | None, host: str) -> None:
    """Serve the tools shad_run, shad_search, shad_read_note, shad_list_notes, shad_status and the
    resources shad://runs and shad://runs/{run_id}/report over stdio (or streamable HTTP with --http).
    Nothing is written to stdout but the protocol; logs go to stderr."""
    from ..config import is_loopback

    if not is_loopback(host):
        raise UsageError(
            f"--host {host} is not a loopback address", hint="the MCP server has no auth: use 127.0.0.1"
        )
    try:
        from ..mcp.server import serve
    except ImportError as exc:
        raise UsageError(
            f"the MCP server needs the mcp package ({exc})", hint="pip install 'shad[mcp]'"
        ) from exc
    from ..mcp import ShadService

    ShadService(vaults)  # refuses a missing folder before the transport starts
    serve(vaults, http_port=http_port, host=host)
