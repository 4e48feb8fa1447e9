"""The broker: the trusted parent's answer to every ``obsidian.*`` call a sandboxed script makes.

Each request is validated (known function for the profile, argument types and sizes, vault-relative
paths with no ``..``, no absolute path, no NUL, nothing hidden, the real path inside the vault or root:
``_checks``), counted against the script's budgets, and answered from the vault layer (or, for the
``local`` profile, from read-only folders: ``_roots``). The child never holds a path.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import NoteNotFoundError, PathOutsideVaultError, ShadError, UsageError
from ..vault import Note, Vault, VaultSet, is_local, properties_text
from ._checks import CallRefused, check_path, hidden_target, int_arg, link_text, str_arg, str_list, where_arg
from ._net import NetPolicy, NetRefused, fetch
from ._roots import MAX_LISTING, FsRoot, choose_root, list_root_files, read_root_file

__all__ = ["PROFILES", "Broker", "BrokerRun", "Budgets", "CallRefused", "FsRoot"]

PROFILES = ("strict", "local", "extended")
EXTERNAL = frozenset({"http_get"})  # the calls that leave the machine (each attempt is audited)
MAX_BODY_CHARS = 2_000_000


@dataclass(frozen=True)
class Budgets:
    """Per-script limits on what the broker hands out."""

    calls: int = 2_000
    reply_bytes: int = 4_000_000
    total_bytes: int = 64_000_000
    http_calls: int = 20


def _json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` with what JSON cannot carry replaced: NaN and infinities become None, integers too long
    to print and other objects become text, anything nested deeper than 100 levels becomes None."""
    if depth > 100:
        return None
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, int):
        try:
            str(value)
        except ValueError:
            return "<an integer too long to print>"
        return value
    if isinstance(value, dict):
        return {str(k): _json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_safe(v, depth + 1) for v in value]
    return str(value)


class Broker:
    """Answers calls for one Sandbox: its vaults, profile, read-only roots and network policy."""

    def __init__(
        self,
        vaults: VaultSet,
        profile: str = "strict",
        roots: tuple[FsRoot, ...] = (),
        net: NetPolicy | None = None,
        budgets: Budgets | None = None,
        exclude: tuple[str, ...] = (),
    ) -> None:
        if profile not in PROFILES:
            raise UsageError(f"unknown sandbox profile {profile!r}", hint=f"use one of {', '.join(PROFILES)}")
        self.vaults = vaults
        self.profile = profile
        self.roots = roots
        self.net = net
        self.budgets = budgets or Budgets()
        self.exclude = exclude  # path prefixes scripts never see in search (e.g. Shad/History)

    def new_run(self) -> BrokerRun:
        return BrokerRun(self)


@dataclass
class BrokerRun:
    """The broker's bookkeeping for one script."""

    broker: Broker
    calls: Counter[str] = field(default_factory=Counter)
    bytes_out: int = 0
    refused: list[str] = field(default_factory=list)
    external: list[dict[str, Any]] = field(default_factory=list)  # every call out of the machine, tried

    def stats(self) -> dict[str, Any]:
        out = {"calls": sum(self.calls.values()), "by_function": dict(self.calls), "bytes": self.bytes_out}
        if self.external:
            out["external"] = list(self.external)
        return out

    def handle(self, frame: Any, encode: Callable[[Any], bytes]) -> bytes:
        """One request frame in, one encoded reply frame out (never raises for a bad request)."""
        call_id = frame.get("id") if isinstance(frame, dict) else None
        try:
            value = self._dispatch(frame)
            try:
                reply = encode({"t": "reply", "id": call_id, "ok": value})
            except (TypeError, ValueError, RecursionError):  # NaN or a huge int in a note's frontmatter
                reply = encode({"t": "reply", "id": call_id, "ok": _json_safe(value)})
            if len(reply) > self.broker.budgets.reply_bytes:
                raise CallRefused(
                    "limited",
                    f"the answer is larger than {self.broker.budgets.reply_bytes} bytes; ask for less "
                    "(a smaller limit, one note at a time)",
                    "LimitExceeded",
                )
            self.bytes_out += len(reply)
            if self.bytes_out > self.broker.budgets.total_bytes:
                raise CallRefused(
                    "limited",
                    f"the script read more than {self.broker.budgets.total_bytes} bytes",
                    "LimitExceeded",
                )
            return reply
        except CallRefused as exc:
            self.refused.append(f"{exc.kind}: {exc}")
            return encode(
                {
                    "t": "reply",
                    "id": call_id,
                    "err": {"kind": exc.kind, "type": exc.type, "message": str(exc)},
                }
            )

    def _dispatch(self, frame: Any) -> Any:
        if not isinstance(frame, dict) or frame.get("t") != "call":
            raise CallRefused("blocked", "malformed request", "ProtocolError")
        fn, kwargs = frame.get("fn"), frame.get("kwargs")
        if not isinstance(fn, str) or not isinstance(kwargs, dict):
            raise CallRefused("blocked", "malformed request", "ProtocolError")
        handler = _HANDLERS.get(fn)
        if handler is None:
            raise CallRefused("error", f"obsidian.{fn} does not exist", "AttributeError")
        profile_needed, method, params = handler
        order = PROFILES.index
        if order(self.broker.profile) < order(profile_needed):
            if fn in EXTERNAL:  # refused by the profile: still an attempt to leave the machine
                target = str(kwargs.get("url", ""))[:300]
                reason = f"the {self.broker.profile} profile allows no network"
                self.external.append({"kind": fn, "target": target, "allowed": False, "reason": reason})
            raise CallRefused(
                "blocked", f"obsidian.{fn} needs the {profile_needed!r} sandbox profile", "ProfileRefused"
            )
        unknown = set(kwargs) - set(params)
        if unknown:
            raise CallRefused(
                "error", f"obsidian.{fn} got unexpected arguments: {sorted(unknown)}", "TypeError"
            )
        self.calls[fn] += 1
        if sum(self.calls.values()) > self.broker.budgets.calls:
            raise CallRefused(
                "limited", f"more than {self.broker.budgets.calls} obsidian calls", "LimitExceeded"
            )
        try:
            return method(self, **kwargs)
        except CallRefused:
            raise
        except PathOutsideVaultError as exc:
            raise CallRefused("blocked", f"{exc.message} ({exc.hint})", "PathOutsideVault") from None
        except NoteNotFoundError as exc:
            raise CallRefused("error", exc.message, "NoteNotFoundError") from None
        except ShadError as exc:
            raise CallRefused("error", exc.message, type(exc).__name__) from None
        except Exception as exc:  # a failing vault read must not take the parent down
            raise CallRefused(
                "error", f"obsidian.{fn} failed: {type(exc).__name__}: {exc}", type(exc).__name__
            ) from None

    # --- vault helpers ------------------------------------------------------------------------------------

    def _vault(self, vault: Any) -> Vault | None:
        name = str_arg("vault", vault, 200, required=False)
        return self.broker.vaults.get(name) if name is not None else None

    def _note(self, path: Any, vault: Any) -> Note:
        rel = check_path(path)
        v = self._vault(vault)
        note = v.read_note(rel) if v is not None else self.broker.vaults.read_note(rel)
        owner = self._owner(note)
        # A vault read through a backend (an MCP server) has no folder here: its server guards its files.
        why = hidden_target(str(owner.root), note.path) if is_local(owner) else None
        if why is not None:  # a symlink inside the vault to .obsidian/ (plugin tokens) or .trash/
            raise CallRefused(
                "blocked",
                f"{note.path!r} is a symlink that {why} of the vault; not readable",
                "PathOutsideVault",
            )
        return note

    def _owner(self, note: Note) -> Vault:
        return self.broker.vaults.get(note.vault or self.broker.vaults.ids[0])

    # --- the API ------------------------------------------------------------------------------------------

    def search(
        self,
        query: Any = None,
        limit: Any = None,
        path: Any = None,
        type: Any = None,
        tags: Any = None,
        where: Any = None,
        vault: Any = None,
        vaults: Any = None,
    ) -> Any:
        q = str_arg("query", query, 1000)
        assert q is not None
        hits = self.broker.vaults.search(
            q,
            limit=int_arg("limit", limit, 1, 200, 10),
            path=check_path(path, "path") if path is not None else None,
            type=str_arg("type", type, 200, required=False),
            tags=str_list("tags", tags),
            where=where_arg(where),
            vault=str_arg("vault", vault, 200, required=False),
            vaults=str_list("vaults", vaults),
            exclude=self.broker.exclude,
            include_templates=False,  # a template is scaffolding, never a source
        )
        return [h.to_dict() for h in hits if self._shown(h.vault, h.path)]

    def _shown(self, vault: str, rel: str) -> bool:
        """A hit may be shown unless it is a symlink to a hidden file (the index keeps symlinks that stay
        inside the vault, even into .obsidian/)."""
        owner = self.broker.vaults.get(vault or self.broker.vaults.ids[0])
        if not is_local(owner):
            return True  # its server decides what it shows
        root = str(owner.root)
        return not os.path.islink(os.path.join(root, rel)) or hidden_target(root, rel) is None

    def read_note(self, path: Any = None, vault: Any = None) -> Any:
        note = self._note(path, vault)
        data = note.to_dict()
        data["properties"] = properties_text(note.frontmatter, note.body, web=True)
        data["backlinks"] = self._owner(note).backlinks(note.path)
        if len(note.body) > MAX_BODY_CHARS:
            data["body"] = note.body[:MAX_BODY_CHARS]
            data["truncated"] = True
        return data

    def list_notes(self, folder: Any = None, recursive: Any = None, vault: Any = None) -> Any:
        sub = check_path(folder, "folder") if folder is not None else None
        rec = True if recursive is None else bool(recursive)
        v = self._vault(vault)
        chosen = [v] if v is not None else list(self.broker.vaults)
        seen: dict[str, None] = {}
        for one in chosen:
            for p in one.list_notes(sub, rec):
                if self._shown(one.id, p):  # a symlink into .obsidian/ is not even named
                    seen.setdefault(p)
        return list(seen)[:MAX_LISTING]

    def get_frontmatter(self, path: Any = None, vault: Any = None) -> Any:
        return self._note(path, vault).to_dict(body=False)["frontmatter"]

    def get_hash(self, path: Any = None, vault: Any = None) -> Any:
        return self._note(path, vault).hash

    def links(self, path: Any = None, vault: Any = None) -> Any:
        note = self._note(path, vault)
        return sorted({lk.resolved for lk in note.links if lk.resolved and lk.resolved != note.path})

    def backlinks(self, path: Any = None, vault: Any = None) -> Any:
        note = self._note(path, vault)
        return self._owner(note).backlinks(note.path)

    def neighbors(self, path: Any = None, depth: Any = None, vault: Any = None) -> Any:
        note = self._note(path, vault)
        return self._owner(note).neighbors(note.path, int_arg("depth", depth, 1, 3, 1))

    def create_wikilink(
        self, path: Any = None, heading: Any = None, alias: Any = None, vault: Any = None
    ) -> Any:
        note = self._note(path, vault)
        target = note.path[:-3] if note.path.lower().endswith(".md") else note.path
        head, label = link_text("heading", heading), link_text("alias", alias)
        return f"[[{target}{'#' + head if head else ''}{'|' + label if label else ''}]]"

    def vault_ids(self) -> Any:
        return self.broker.vaults.ids

    # --- profile local: read-only roots -------------------------------------------------------------------

    def read_file(self, path: Any = None, root: Any = None) -> Any:
        return read_root_file(choose_root(self.broker.roots, root), check_path(path))

    def list_files(self, folder: Any = None, root: Any = None) -> Any:
        r = choose_root(self.broker.roots, root)
        return list_root_files(r, check_path(folder, "folder") if folder is not None else "")

    def root_ids(self) -> Any:
        return [r.id for r in self.broker.roots]

    # --- profile extended: HTTP GET done here -------------------------------------------------------------

    def http_get(self, url: Any = None) -> Any:
        u = str_arg("url", url, 2000)
        assert u is not None
        attempt: dict[str, Any] = {"kind": "http_get", "target": u[:300], "allowed": False}
        self.external.append(attempt)  # the audit trail: allowed or not, the attempt is kept
        if self.broker.net is None:
            attempt["reason"] = "no --net-allow hosts were given to this sandbox"
            raise CallRefused("blocked", attempt["reason"], "NetRefused")
        if self.calls["http_get"] > self.broker.budgets.http_calls:
            attempt["reason"] = f"more than {self.broker.budgets.http_calls} HTTP requests"
            raise CallRefused("limited", attempt["reason"], "LimitExceeded")
        try:
            page = fetch(u, self.broker.net)
        except NetRefused as exc:
            attempt["reason"] = str(exc)
            raise CallRefused(exc.kind, str(exc), "NetRefused") from None
        except Exception as exc:  # allowed, but the request failed (DNS, TLS, a reset)
            attempt.update(allowed=True, reason=f"failed: {type(exc).__name__}: {exc}"[:300])
            raise
        attempt.update(allowed=True, status=page.get("status"))
        return page


_P = ("path", "vault")
_HANDLERS: dict[str, tuple[str, Callable[..., Any], tuple[str, ...]]] = {
    "search": (
        "strict",
        BrokerRun.search,
        ("query", "limit", "path", "type", "tags", "where", "vault", "vaults"),
    ),
    "read_note": ("strict", BrokerRun.read_note, _P),
    "list_notes": ("strict", BrokerRun.list_notes, ("folder", "recursive", "vault")),
    "get_frontmatter": ("strict", BrokerRun.get_frontmatter, _P),
    "get_hash": ("strict", BrokerRun.get_hash, _P),
    "links": ("strict", BrokerRun.links, _P),
    "backlinks": ("strict", BrokerRun.backlinks, _P),
    "neighbors": ("strict", BrokerRun.neighbors, (*_P, "depth")),
    "create_wikilink": ("strict", BrokerRun.create_wikilink, (*_P, "heading", "alias")),
    "vaults": ("strict", BrokerRun.vault_ids, ()),
    "read_file": ("local", BrokerRun.read_file, ("path", "root")),
    "list_files": ("local", BrokerRun.list_files, ("folder", "root")),
    "roots": ("local", BrokerRun.root_ids, ()),
    "http_get": ("extended", BrokerRun.http_get, ("url",)),
}
