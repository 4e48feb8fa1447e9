"""Shad as an MCP server: ``build_server`` and ``serve`` (needs the ``mcp`` extra)."""

from __future__ import annotations

from ._server import build_server, serve

__all__ = ["build_server", "serve"]
