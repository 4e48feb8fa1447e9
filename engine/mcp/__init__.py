"""Shad and MCP (issue 15, I9, V7): Shad as an MCP server, and an MCP client backend for vaults.

``ShadService`` is what the server's tools do, without the protocol (no SDK import); ``build_server`` /
``serve`` (in ``engine.mcp.server``) need the ``mcp`` extra and are imported on use. ``McpVault`` (and
``open_mcp_vault("mcp:COMMAND")``) reads a vault through an MCP server; it imports the SDK on connect."""

from __future__ import annotations

from ._backend import McpBackendError, McpVault, note_from_dict, open_mcp_vault
from ._service import PROGRESS_KINDS, ShadService, redact

__all__ = [
    "PROGRESS_KINDS",
    "McpBackendError",
    "McpVault",
    "ShadService",
    "note_from_dict",
    "open_mcp_vault",
    "redact",
]
