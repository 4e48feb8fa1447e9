"""One node's full details for the explorer's side panel: task, retrieval script(s), context excerpt,
citations, answer, tokens, timings, error, and for a software run the files the node produced, its checks
and its repairs. Built only for the node the user opened, so the front end never receives every node's
context up front."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from engine.retrieval.citations import make_citation

__all__ = ["code_badge", "new_code", "node_details", "read_dag_node"]

EXCERPT_CHARS = 600  # per context item
MAX_ITEMS = 20
MAX_TEXT = 20_000  # answer, script: enough to read, bounded so one click cannot ship megabytes
MAX_FILES = 200  # paths listed per node
MAX_REPAIRS = 20  # repair attempts kept per node (the count keeps going)


def new_code() -> dict[str, Any]:
    """What a software run's events say about one node's code (``DagState.code``): the files it produced,
    its last check (``{status, level, findings, checks}``), its repairs and contract change requests."""
    return {
        "files": [],
        "check": None,
        "repairs": {"count": 0, "last": "", "attempts": []},
        "contract_changes": [],
    }


def code_badge(code: dict[str, Any] | None) -> dict[str, Any] | None:
    """The light code fields the graph draws on a node: ``check`` (pass | fail | skip, or None before the
    node is checked), ``findings``, ``files`` and ``repairs`` (counts), ``last_repair`` (its outcome).
    None for a node without code."""
    if code is None:
        return None
    check = code.get("check") or {}
    repairs = code.get("repairs") or {}
    return {
        "check": check.get("status"),
        "findings": int(check.get("findings") or 0),
        "files": len(code.get("files") or []),
        "repairs": int(repairs.get("count") or 0),
        "last_repair": str(repairs.get("last") or ""),
    }


def read_dag_node(history_dir: Path | None, node_id: str) -> dict[str, Any] | None:
    """A node as the engine last saved it in ``dag.json`` (written atomically after every change), or
    None when the file or the node is not there yet."""
    if history_dir is None:
        return None
    try:
        data = json.loads((history_dir / "dag.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for node in data.get("nodes", []) if isinstance(data, dict) else []:
        if isinstance(node, dict) and node.get("id") == node_id:
            return node
    return None


def node_details(
    node_id: str,
    *,
    saved: dict[str, Any] | None,
    live: dict[str, Any] | None,
    history_dir: Path | None,
    multi_vault: bool = False,
) -> dict[str, Any]:
    """Merge what the engine saved about a node (``Node.to_dict()``) with what the live events said
    (fresher status and phase while the run works). Empty when neither knows the node."""
    if saved is None and live is None:
        return {}
    saved, live = saved or {}, live or {}
    retrieval = _dict(saved.get("retrieval"))
    status = str(live.get("status") or saved.get("status") or "CREATED")
    error = saved.get("error") if isinstance(saved.get("error"), dict) else None
    if error is None and live.get("error"):
        error = {"message": str(live["error"])}
    answer = str(saved.get("answer") or "")
    context = [c for c in retrieval.get("context") or [] if isinstance(c, dict)]
    checkpoint = live.get("checkpoint")
    return {
        "id": node_id,
        "task": str(saved.get("task") or live.get("task") or ""),
        "stage": str(saved.get("stage") or live.get("stage") or ""),
        "depth": saved.get("depth", live.get("depth", 0)),
        "parent": saved.get("parent", live.get("parent")),
        "children": list(live.get("children") or []),
        "hard_deps": list(saved.get("hard_deps") or live.get("hard_deps") or []),
        "soft_deps": list(saved.get("soft_deps") or live.get("soft_deps") or []),
        "status": status,
        "phase": str(live.get("phase") or ""),
        "note": str(saved.get("note") or live.get("note") or ""),
        "error": _error(error),
        "tokens": int(max(_int(saved.get("tokens")), _int(live.get("tokens")))),
        "llm_calls": int(max(_int(saved.get("llm_calls")), _int(live.get("llm_calls")))),
        "started_at": saved.get("started_at") or live.get("started_at"),
        "finished_at": saved.get("finished_at") or live.get("finished_at"),
        "duration_ms": saved.get("duration_ms") or live.get("duration_ms") or 0.0,
        "retrieval": _retrieval(retrieval, len(context)),
        "scripts": _scripts(node_id, retrieval, history_dir),
        "context": [_excerpt(c, multi_vault) for c in context[:MAX_ITEMS]],
        "context_total": len(context),
        "citations": [_citation(c, multi_vault) for c in saved.get("citations") or [] if isinstance(c, dict)],
        "answer": answer[:MAX_TEXT],
        "answer_truncated": len(answer) > MAX_TEXT,
        # The seam for checkpoint widgets: a node waiting for a human says so, with what it waits on.
        "needs_human": status == "NEEDS_HUMAN",
        "checkpoint": checkpoint if isinstance(checkpoint, dict) else None,
        "code": _code(live.get("code")),
        "source": "history" if saved else "events",
    }


def _code(code: Any) -> dict[str, Any] | None:
    """A software node's files, check results, repairs and contract change requests (None otherwise)."""
    if not isinstance(code, dict):
        return None
    files = [str(f) for f in code.get("files") or []]
    check = code.get("check") if isinstance(code.get("check"), dict) else None
    repairs = _dict(code.get("repairs"))
    return {
        "files": files[:MAX_FILES],
        "files_total": len(files),
        "check": dict(check, checks=dict(check.get("checks") or {})) if check else None,
        "repairs": {
            "count": _int(repairs.get("count")),
            "last": str(repairs.get("last") or ""),
            "attempts": [dict(a) for a in repairs.get("attempts") or [] if isinstance(a, dict)],
        },
        "contract_changes": [str(c)[:MAX_TEXT] for c in code.get("contract_changes") or []],
    }


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _error(error: dict[str, Any] | None) -> dict[str, Any] | None:
    if not error:
        return None
    return {
        "message": str(error.get("message") or ""),
        "error_class": str(error.get("error_class") or ""),
        "phase": str(error.get("phase") or ""),
        "trace": str(error.get("trace") or "")[-4000:],
    }


def _retrieval(retrieval: dict[str, Any], items: int) -> dict[str, Any] | None:
    if not retrieval or "method" not in retrieval:
        return None
    return {
        "method": str(retrieval.get("method") or ""),
        "score": retrieval.get("retrieval_score"),
        "confidence": retrieval.get("confidence"),
        "why": str(retrieval.get("why") or ""),
        "queries": [str(q) for q in retrieval.get("queries") or []][:20],
        "items": items,
    }


def _scripts(node_id: str, retrieval: dict[str, Any], history_dir: Path | None) -> list[dict[str, Any]]:
    """The retrieval script(s) the model wrote for this node, oldest attempt first, with how each went.
    The Code Mode retriever keeps them as ``artifacts/scripts/<node>-<attempt>.py`` (+ ``.json``)."""
    if isinstance(retrieval.get("script"), str):
        return [{"name": "script", "code": retrieval["script"][:MAX_TEXT], "outcome": ""}]
    folder = history_dir / "artifacts" / "scripts" if history_dir is not None else None
    if folder is None or not folder.is_dir():
        return []
    pattern = re.compile(rf"^{re.escape(node_id)}-(\d+)\.(py|json)$")
    attempts: dict[int, dict[str, Path]] = {}
    for path in folder.iterdir():
        match = pattern.match(path.name)
        if match:
            attempts.setdefault(int(match.group(1)), {})[match.group(2)] = path
    out = []
    for attempt in sorted(attempts):
        files = attempts[attempt]
        code = _read(files.get("py"))
        out.append(
            {
                "name": f"{node_id}-{attempt}.py" if "py" in files else f"{node_id}-{attempt}",
                "code": code[:MAX_TEXT],
                "outcome": _outcome(_read(files.get("json"))),
            }
        )
    return out


def _read(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _outcome(raw: str) -> str:
    """One line on how a script attempt went, from the retriever's ``.json`` record."""
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    error = data.get("error")
    if isinstance(error, dict):
        return f"failed: {error.get('kind', 'error')}: {error.get('message', '')}".rstrip(": ")
    result = _dict(data.get("result"))
    items = len(result.get("context") or []) if isinstance(result.get("context"), list) else 0
    dropped = len(data.get("dropped") or [])
    score = data.get("retrieval_score")
    parts = [f"{items} passage(s)"]
    if dropped:
        parts.append(f"{dropped} dropped")
    if isinstance(score, (int, float)):
        parts.append(f"score {score:.2f}")
    return "ran: " + ", ".join(parts)


def _excerpt(item: dict[str, Any], multi_vault: bool) -> dict[str, Any]:
    text = str(item.get("text") or "")
    link = item.get("citation") or make_citation(
        str(item.get("vault") or ""), str(item.get("path") or ""), item.get("heading"), multi_vault
    )
    return {
        "citation": str(link),
        "path": str(item.get("path") or ""),
        "heading": item.get("heading"),
        "excerpt": text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…",
        "chars": len(text),
    }


def _citation(item: dict[str, Any], multi_vault: bool) -> dict[str, Any]:
    heading = item.get("heading") if isinstance(item.get("heading"), str) else None
    block = item.get("block") if isinstance(item.get("block"), str) else None
    return {
        "link": make_citation(
            str(item.get("vault") or ""), str(item.get("path") or ""), heading, multi_vault, block
        ),
        "path": str(item.get("path") or ""),
        "resolved": bool(item.get("resolved", True)),
    }
