"""The explorer as text, for places that cannot run widgets (nbconvert HTML, GitHub's viewer, a terminal
IPython): a markdown table of the DAG and a plain-text tree, both from the same ``Snapshot``."""

from __future__ import annotations

from typing import Any

from ._state import Snapshot

__all__ = ["markdown_summary", "plain_summary"]

MAX_ROWS = 60  # a fallback is an overview; the history folder has every node
_MARKS = {
    "SUCCEEDED": "✅",
    "CACHE_HIT": "♻️",
    "FAILED": "❌",
    "PRUNED": "✂️",
    "STARTED": "⏳",
    "CREATED": "·",
    "NEEDS_HUMAN": "✋",
    "FAILED_WITH_DIAGNOSTIC": "⚠️",
}


def _tree_order(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parents before their children, depth first, so the table and the tree read as an outline."""
    by_parent: dict[str | None, list[dict[str, Any]]] = {}
    ids = {n["id"] for n in nodes}
    for n in nodes:
        by_parent.setdefault(n["parent"] if n["parent"] in ids else None, []).append(n)
    out: list[dict[str, Any]] = []
    stack = list(reversed(by_parent.get(None, [])))
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(by_parent.get(node["id"], [])))
    return out


def _amount(used: int | float, limit: int | float | None, unit: str = "") -> str:
    text = f"{used:,.1f}{unit}" if isinstance(used, float) else f"{used:,}{unit}"
    if limit is None:
        return text
    limit_text = f"{limit:,.0f}{unit}" if isinstance(limit, float) else f"{limit:,}{unit}"
    return f"{text} / {limit_text}"


def headline(snap: Snapshot) -> str:
    """One line: the run, its status, and the budget strip."""
    b = snap.budget
    parts = [
        f"{snap.status or 'no run yet'}",
        f"nodes {b.get('nodes_succeeded', b['nodes_done'])}/{b['nodes_total']} done"
        + "".join(f" · {b[f'nodes_{k}']} {k}" for k in ("pruned", "failed") if b.get(f"nodes_{k}"))
        + (f" (limit {b['nodes_limit']})" if b.get("nodes_limit") else ""),
        f"tokens {_amount(b['tokens_used'], b.get('tokens_limit'))}"
        + (f" (over budget by {b['tokens_over_by']:,})" if b.get("tokens_over_by") else ""),
        f"wall {_amount(float(b['wall_s']), b.get('wall_limit_s'), ' s')}",
    ]
    return " · ".join(parts)


def _duration(ms: float) -> str:
    if not ms:
        return ""
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _cell(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def markdown_summary(snap: Snapshot) -> str:
    title = f"**Shad run `{snap.run_id}`**" if snap.run_id else "**Shad DAG explorer**"
    lines = [f"{title} — {headline(snap)}", ""]
    if snap.goal:
        lines += [f"> {_cell(snap.goal, 400)}", ""]
    if snap.notice:
        lines += [f"*{_cell(snap.notice, 400)}*", ""]
    nodes = _tree_order(snap.nodes)
    if not nodes:
        lines.append("_No nodes yet._")
        return "\n".join(lines)
    lines += ["| Node | Status | Stage | Tokens | Time | Task |", "|---|---|---|---:|---:|---|"]
    for n in nodes[:MAX_ROWS]:
        indent = "&nbsp;&nbsp;" * int(n["depth"]) + ("↳ " if n["depth"] else "")
        mark = _MARKS.get(n["status"], "")
        seconds = _duration(n["duration_ms"])
        task = n["task"] + (f" — {n['error']}" if n.get("error") else "")
        lines.append(
            f"| {indent}`{_cell(n['id'], 60)}` | {mark} {n['status']} | {_cell(n['stage'], 30)} "
            f"| {n['tokens']:,} | {seconds} | {_cell(task)} |"
        )
    if len(nodes) > MAX_ROWS:
        lines.append(f"\n_… and {len(nodes) - MAX_ROWS} more nodes (see the run's `dag.json`)._")
    return "\n".join(lines)


def plain_summary(snap: Snapshot) -> str:
    title = f"Shad run {snap.run_id}" if snap.run_id else "Shad DAG explorer"
    lines = [f"{title}: {headline(snap)}"]
    if snap.notice:
        lines.append(f"  {snap.notice}")
    nodes = _tree_order(snap.nodes)
    for n in nodes[:MAX_ROWS]:
        task = " ".join(n["task"].split())
        lines.append(f"{'  ' * (int(n['depth']) + 1)}{n['id']} [{n['status']}] {task[:70]}")
    if len(nodes) > MAX_ROWS:
        lines.append(f"  … and {len(nodes) - MAX_ROWS} more nodes")
    return "\n".join(lines)
