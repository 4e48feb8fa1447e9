"""Inside the sandbox: the ``obsidian`` object scripts call, and the conversion of ``__result__`` to JSON.

Every ``obsidian.*`` call is a request frame to the trusted parent, which validates it and answers from
the vault. The child holds no path, file or socket to the vault. Loaded inside the sandbox child.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import socket
from collections import deque
from pathlib import PurePath
from typing import Any

from ._policy import Recorder
from ._wire import FrameError, encode, recv_frame

__all__ = ["MAX_REPLY_BYTES", "Obsidian", "ObsidianError", "ResultError", "to_plain"]

MAX_REPLY_BYTES = 8 << 20
MAX_REQUEST_BYTES = 256 << 10
MAX_DEPTH = 64


class ObsidianError(Exception):
    """An ``obsidian.*`` call failed in an ordinary way (no such note, bad argument)."""


class NoteNotFound(ObsidianError, LookupError):
    """The note (or file) does not exist."""


class Obsidian:
    """The vault API inside scripts. Read-only; every call goes to the trusted parent."""

    __slots__ = ("_calls", "_chan", "_recorder")

    Error = ObsidianError
    NotFound = NoteNotFound

    def __init__(self, chan: socket.socket, recorder: Recorder) -> None:
        self._chan = chan
        self._recorder = recorder
        self._calls = 0

    def _call(self, fn: str, **kwargs: Any) -> Any:
        self._calls += 1
        args = {k: v for k, v in kwargs.items() if v is not None}
        try:
            payload = encode({"t": "call", "id": self._calls, "fn": fn, "kwargs": args})
        except (TypeError, ValueError) as exc:
            raise TypeError(f"obsidian.{fn}: arguments must be plain JSON values ({exc})") from None
        except RecursionError:
            raise TypeError(f"obsidian.{fn}: arguments are nested too deeply") from None
        if len(payload) > MAX_REQUEST_BYTES:
            self._recorder.limit(f"obsidian.{fn}: arguments larger than {MAX_REQUEST_BYTES} bytes")
        self._chan.sendall(payload)
        try:
            reply = recv_frame(self._chan, MAX_REPLY_BYTES)
        except FrameError as exc:
            self._recorder.limit(f"obsidian.{fn}: reply refused ({exc})")
        if not isinstance(reply, dict):
            self._recorder.limit(f"obsidian.{fn}: the broker closed the connection")
        if "ok" in reply:
            return reply["ok"]
        err = reply.get("err") or {}
        kind, message = err.get("kind", "error"), str(err.get("message", "call failed"))
        if kind == "blocked":
            self._recorder.block(message)
        if kind == "limited":
            self._recorder.limit(message)
        if err.get("type") in ("NoteNotFoundError", "FileNotFound"):
            raise NoteNotFound(message)
        raise ObsidianError(message)

    # --- the API (signatures mirror the broker's) ---------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 10,
        path: str | None = None,
        type: str | None = None,
        tags: Any = None,
        where: dict[str, Any] | None = None,
        vault: str | None = None,
        vaults: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Ranked full-text search; each hit has vault, path, title, score, snippet, heading, type, tags,
        and ``passage``: the whole passage that matched (the note's properties lead its first one)."""
        return self._call(  # type: ignore[no-any-return]
            "search", query=query, limit=limit, path=path, type=type, tags=tags, where=where,
            vault=vault, vaults=vaults,
        )  # fmt: skip

    def read_note(self, path: str, vault: str | None = None) -> dict[str, Any]:
        """One note: path, title, frontmatter, ``properties`` (its frontmatter as ``key: value`` lines),
        body, tags, headings, links, hash, ..."""
        return self._call("read_note", path=path, vault=vault)  # type: ignore[no-any-return]

    def list_notes(
        self, folder: str | None = None, recursive: bool = True, vault: str | None = None
    ) -> list[str]:
        return self._call("list_notes", folder=folder, recursive=recursive, vault=vault)  # type: ignore[no-any-return]

    def get_frontmatter(self, path: str, vault: str | None = None) -> dict[str, Any]:
        return self._call("get_frontmatter", path=path, vault=vault)  # type: ignore[no-any-return]

    def get_hash(self, path: str, vault: str | None = None) -> str:
        return self._call("get_hash", path=path, vault=vault)  # type: ignore[no-any-return]

    def links(self, path: str, vault: str | None = None) -> list[str]:
        """Vault paths this note links to (resolved links only)."""
        return self._call("links", path=path, vault=vault)  # type: ignore[no-any-return]

    def backlinks(self, path: str, vault: str | None = None) -> list[str]:
        return self._call("backlinks", path=path, vault=vault)  # type: ignore[no-any-return]

    def neighbors(self, path: str, depth: int = 1, vault: str | None = None) -> list[str]:
        return self._call("neighbors", path=path, depth=depth, vault=vault)  # type: ignore[no-any-return]

    def create_wikilink(
        self, path: str, heading: str | None = None, alias: str | None = None, vault: str | None = None
    ) -> str:
        """A full-path wikilink to a note, e.g. ``[[Brewing/Espresso#Ratio|espresso]]``."""
        return self._call(  # type: ignore[no-any-return]
            "create_wikilink", path=path, heading=heading, alias=alias, vault=vault
        )

    def vaults(self) -> list[str]:
        return self._call("vaults")  # type: ignore[no-any-return]

    def read_file(self, path: str, root: str | None = None) -> str:
        """Profile ``local``: a text file under an allow-listed ``--fs-read`` root."""
        return self._call("read_file", path=path, root=root)  # type: ignore[no-any-return]

    def list_files(self, folder: str | None = None, root: str | None = None) -> list[str]:
        return self._call("list_files", folder=folder, root=root)  # type: ignore[no-any-return]

    def roots(self) -> list[str]:
        return self._call("roots")  # type: ignore[no-any-return]

    def http_get(self, url: str) -> dict[str, Any]:
        """Profile ``extended``: GET an https URL on an allow-listed host, done by the parent."""
        return self._call("http_get", url=url)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return "<obsidian vault API>"


# --- __result__ -> plain JSON -----------------------------------------------------------------------------


class ResultError(Exception):
    """``__result__`` cannot be returned: ``kind`` is "limited" (too big/deep) or "error" (not JSON-like)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def to_plain(value: Any, budget: int) -> Any:
    """Convert ``value`` to plain JSON data (no live objects), refusing more than ``budget`` bytes
    (estimated as it goes, so a shared-reference bomb stops early) or nesting deeper than 64."""
    used = [0]

    def spend(n: int) -> None:
        used[0] += n
        if used[0] > budget:
            raise ResultError("limited", f"__result__ plus printed output exceed {budget} bytes; return less")

    def conv(x: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise ResultError("limited", f"__result__ is nested deeper than {MAX_DEPTH} levels")
        if x is None or isinstance(x, bool):
            spend(5)
            return x
        if isinstance(x, enum.Enum):
            return conv(x.value, depth)
        if isinstance(x, int):
            try:
                text = int.__repr__(x)
            except ValueError:
                raise ResultError("limited", "__result__ holds an integer too large to return") from None
            spend(len(text))
            return int(x)
        if isinstance(x, float):
            spend(24)
            return float(x) if math.isfinite(x) else None
        if isinstance(x, str):
            spend(len(x) + 2)
            return str.__str__(x)
        if isinstance(x, dict):
            out: dict[str, Any] = {}
            spend(2)
            for k, v in dict.items(x):
                key = _key(k)
                spend(len(key) + 4)
                out[key] = conv(v, depth + 1)
            return out
        if isinstance(x, (list, tuple, set, frozenset, deque)):
            items = list(x)
            if isinstance(x, (set, frozenset)):
                items = _sorted_if_possible(items)
            spend(2)
            result = []
            for item in items:
                spend(1)
                result.append(conv(item, depth + 1))
            return result
        if isinstance(x, (datetime.date, datetime.time)):
            return conv(x.isoformat(), depth)
        if isinstance(x, datetime.timedelta):
            return conv(x.total_seconds(), depth)
        if isinstance(x, PurePath):
            return conv(x.as_posix(), depth)
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            return conv({f.name: getattr(x, f.name) for f in dataclasses.fields(x)}, depth)
        raise ResultError(
            "error",
            f"__result__ contains a {type(x).__name__!r} object; return only dicts, lists, strings, "
            "numbers, booleans and None",
        )

    return conv(value, 0)


def _key(k: Any) -> str:
    if isinstance(k, str):
        return str.__str__(k)
    if k is None or isinstance(k, (bool, int, float)):
        return "null" if k is None else ("true" if k is True else "false" if k is False else repr(k))
    if isinstance(k, enum.Enum):
        return _key(k.value)
    raise ResultError(
        "error", f"__result__ has a dict key of type {type(k).__name__!r}; keys must be strings"
    )


def _sorted_if_possible(items: list[Any]) -> list[Any]:
    try:
        return sorted(items)
    except TypeError:
        return items
