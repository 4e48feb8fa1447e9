"""Vault backends: how a vault named ``SCHEME:REST`` is opened when it is not a folder.

A backend is a function ``open(spec, include_history=...)`` returning an object with the read side of
``Vault`` (``id``, ``search``, ``read_note``, ``list_notes``, ``backlinks``, ``neighbors``,
``content_hashes``, ``conflict_copies``, ``status``, ``refresh``, ``close``) and ``read_only = True``.
Backends register by scheme, in code (``register_backend``) or as a ``shad.vault_backends`` entry point
(this is how ``engine.mcp`` provides ``mcp:`` without the vault layer importing it). ``location`` is
the stable name of any vault, used to key caches and histories: its folder, or its spec."""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from ..config import remote_scheme
from ..errors import UsageError

__all__ = [
    "ENTRY_POINT_GROUP",
    "backend_names",
    "get_backend",
    "is_local",
    "location",
    "open_vault",
    "register_backend",
]

ENTRY_POINT_GROUP = "shad.vault_backends"
# What to install for a backend that is known but not available (the hint of get_backend's error).
INSTALL_HINTS = {"mcp": "pip install 'shad[mcp]'"}

Opener = Callable[..., Any]
_registry: dict[str, Opener] = {}


def register_backend(scheme: str, opener: Opener) -> None:
    """Make ``SCHEME:...`` vaults open with ``opener(spec, include_history=...)``."""
    _registry[scheme] = opener


def backend_names() -> list[str]:
    return sorted(set(_registry) | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def get_backend(scheme: str) -> Opener:
    """The opener for ``scheme``; an error naming the scheme, the known ones and what to install."""
    if scheme not in _registry:
        for ep in entry_points(group=ENTRY_POINT_GROUP, name=scheme):
            try:
                _registry[scheme] = ep.load()
            except ImportError as exc:
                raise UsageError(
                    f"the {scheme}: vault backend cannot load: {exc}",
                    hint=INSTALL_HINTS.get(scheme, "reinstall shad"),
                ) from exc
            break
    opener = _registry.get(scheme)
    if opener is None:
        known = ", ".join(f"{n}:" for n in backend_names()) or "none"
        raise UsageError(
            f"no vault backend for {scheme}:",
            hint=INSTALL_HINTS.get(scheme)
            or f"a vault is a folder, or one of the backends {known} (e.g. mcp:shad mcp serve --vault DIR)",
        )
    return opener


def open_vault(spec: str, *, include_history: bool = False) -> Any:
    """The vault a ``SCHEME:...`` spec names, opened through its backend."""
    scheme = remote_scheme(spec)
    if scheme is None:
        raise UsageError(f"not a backend vault: {spec!r}", hint="a backend vault looks like mcp:COMMAND")
    return get_backend(scheme)(spec, include_history=include_history)


def is_local(vault: Any) -> bool:
    """Is this a vault folder Shad can look into (and, with the writer's rules, write to)?"""
    return not getattr(vault, "read_only", False) and isinstance(getattr(vault, "root", None), os.PathLike)


def location(vault: Any) -> str:
    """A vault's stable name: its folder for a local vault, its spec (``mcp:...``) for a backend's."""
    explicit = getattr(vault, "location", None)
    return str(explicit) if explicit else str(vault.root)
