"""How a run's parts and search results show in a notebook: ``ShadResult.dag`` (a networkx graph) as a
table of its nodes indented as the tree, ``.citations`` (a list) and ``%shad search`` (a DataFrame) as
tables whose notes are links, ``.metrics`` (a DataFrame) with readable columns: the task wraps in a wide
column instead of one word per line beside a 64-character cache key. Snippets and tasks are shown whole;
a missing value is "—", never ``NaN`` or ``None``.

The objects stay what code expects (a ``DiGraph``, a ``list``, ``DataFrame``\\ s: only their display
changes; a frame derived from one, ``head()`` or a filter, is a plain ``DataFrame``). pandas and networkx
are imported on first use (``%load_ext shad_magics`` imports neither), so the classes deriving from them
are made then; the module's ``__getattr__`` makes them on demand too, for pickle to find them by name."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["Citations", "metrics_frame", "metrics_html", "run_graph", "search_frame"]

DASH = "—"
_MAX_ROWS = 200  # a table longer than this ends with "… N more rows" (the object holds them all)
# Inline (a notebook's own table CSS centres and right-aligns every cell; a <style> block may be
# sanitized away), and short: each cell carries its style.
_CELL = "text-align:left;vertical-align:top"
_NOWRAP = _CELL + ";white-space:nowrap"
_WIDE = _CELL + ";white-space:normal;min-width:22em"  # prose: it wraps, but is never one word wide
_NUMBER = "text-align:right;vertical-align:top;white-space:nowrap"
_COLOURS = {"SUCCEEDED": "#2e7d32", "CACHE_HIT": "#00838f", "FAILED": "#c62828", "PRUNED": "#8e24aa"}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _text(value: Any) -> str:
    """A cell's text, escaped; a missing value is a dash."""
    return DASH if _missing(value) else html.escape(str(value))


def _number(value: Any, digits: int | None = None) -> str:
    if _missing(value):
        return DASH
    if digits is not None:
        return f"{float(value):.{digits}f}"
    return str(int(value)) if float(value).is_integer() else str(value)


def _link(label: str, uri: str | None, file: str | None) -> str:
    """A note: its name opens it in Obsidian; ↗ opens the file (each only when there is a target)."""
    text = html.escape(label)
    if uri:
        text = f'<a href="{html.escape(uri)}" title="Open in Obsidian">{text}</a>'
    if file:
        text += f' <a href="{html.escape(file)}" title="Open the file">↗</a>'
    return text


def _status(value: Any) -> str:
    colour = _COLOURS.get(str(value))
    text = _text(value)
    return f'<span style="color:{colour};font-weight:600">{text}</span>' if colour else text


def _table(
    headers: Sequence[tuple[str, str]], rows: Iterable[Sequence[str]], caption: str = "", note: str = ""
) -> str:
    """An HTML table: ``headers`` are (title, cell style); cells are HTML already."""
    head = "".join(f'<th style="{style}">{html.escape(title)}</th>' for title, style in headers)
    body, count = [], 0
    for row in rows:
        count += 1
        if count <= _MAX_ROWS:
            cells = "".join(f'<td style="{style}">{cell}</td>' for (_, style), cell in zip(headers, row))
            body.append(f"<tr>{cells}</tr>")
    if count > _MAX_ROWS:
        body.append(f'<tr><td colspan="{len(headers)}">… {count - _MAX_ROWS} more rows</td></tr>')
    if not count:
        body.append(f'<tr><td colspan="{len(headers)}">{DASH} none</td></tr>')
    top = f'<caption style="text-align:left;caption-side:top">{caption}</caption>' if caption else ""
    tail = f'<div style="opacity:0.7;font-size:90%">{note}</div>' if note else ""
    return (
        f'<div class="shad-table"><table>{top}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>{tail}</div>"
    )


def _indent(depth: Any, text: str) -> str:
    level = int(depth) if not _missing(depth) else 0
    return f'<span style="padding-left:{1.2 * level:.1f}em">{text}</span>' if level else text


# --- citations --------------------------------------------------------------------------------------------


class Citations(list[dict[str, Any]]):
    """``ShadResult.citations``: the list of citation dicts (each with ``uri`` and ``file`` when its note
    can be opened), shown as a table whose notes are links."""

    def _repr_html_(self) -> str:
        rows = []
        for i, c in enumerate(self, 1):
            label = str(c.get("path", "")).removesuffix(".md")
            resolved = bool(c.get("resolved"))
            rows.append(
                (
                    str(i),
                    _link(label, c.get("uri"), c.get("file")),
                    _text(c.get("heading") or (f"^{c['block']}" if c.get("block") else None)),
                    _text(c.get("vault")),
                    "✓" if resolved else '<span style="color:#c62828">⚠ unresolved</span>',
                )
            )
        headers = [("#", _NUMBER), ("note", _NOWRAP), ("heading", _CELL), ("vault", _NOWRAP), ("", _NOWRAP)]
        noun = "citation" if len(self) == 1 else "citations"
        return _table(headers, rows, caption=f"{len(self)} {noun}")


# --- the DAG ----------------------------------------------------------------------------------------------


def _tree_order(nodes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Node ids parents first, each followed by its children (as ``shad trace tree``)."""
    children: dict[str | None, list[str]] = {}
    for node_id, attrs in nodes.items():
        parent = attrs.get("parent")
        children.setdefault(parent if parent in nodes else None, []).append(node_id)
    order: list[str] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        node_id = stack.pop()
        if node_id in order:
            continue
        order.append(node_id)
        stack.extend(reversed(children.get(node_id, [])))
    return order + [n for n in nodes if n not in order]


def dag_html(graph: Any) -> str:
    """A run's graph as a table: one row per node, indented under its parent, with its status, stage,
    whole task, tokens, time, citations and the nodes it waits for."""
    nodes = {str(n): dict(a) for n, a in graph.nodes(data=True)}
    rows = []
    for node_id in _tree_order(nodes):
        a = nodes[node_id]
        deps = [d for d in a.get("hard_deps") or [] if d != a.get("parent")]
        duration: Any = a.get("duration_ms")
        rows.append(
            (
                _indent(a.get("depth"), f"<code>{html.escape(node_id)}</code>"),
                _status(a.get("status")),
                _text(a.get("stage")),
                _text(a.get("task")),
                _number(a.get("tokens")),
                DASH if _missing(duration) else f"{float(duration) / 1000:.2f}",
                str(len(a.get("citations") or [])),
                ", ".join(html.escape(str(d)) for d in deps) or DASH,
            )
        )
    headers = [
        ("node", _NOWRAP), ("status", _NOWRAP), ("stage", _NOWRAP), ("task", _WIDE), ("tokens", _NUMBER),
        ("time (s)", _NUMBER), ("citations", _NUMBER), ("waits for", _NOWRAP),
    ]  # fmt: skip
    counts: dict[str, int] = {}
    for a in nodes.values():
        counts[str(a.get("status"))] = counts.get(str(a.get("status")), 0) + 1
    states = ", ".join(f"{n} {html.escape(s)}" for s, n in counts.items())
    edges = graph.number_of_edges()
    caption = f"DAG of run <code>{_text(graph.graph.get('run_id'))}</code>: {len(nodes)} nodes ({states})"
    return _table(headers, rows, caption=caption, note=f"a networkx.DiGraph: {edges} edges")


@cache
def _graph_class() -> type:
    import networkx as nx

    class RunGraph(nx.DiGraph):  # type: ignore[misc]
        """The run's DAG, a ``networkx.DiGraph`` (node attributes: each node's fields; edge ``kind``:
        child / hard / soft) that shows in a notebook as a table of its nodes."""

        def _repr_html_(self) -> str:
            return dag_html(self)

        def __repr__(self) -> str:
            run_id = self.graph.get("run_id", "?")
            return (
                f"<RunGraph of run {run_id}: {self.number_of_nodes()} nodes, {self.number_of_edges()} edges>"
            )

    RunGraph.__module__, RunGraph.__qualname__ = __name__, "RunGraph"
    return RunGraph


def run_graph(run_id: str) -> Any:
    """An empty ``RunGraph`` (a ``networkx.DiGraph``) for a run, for ``ShadResult.dag`` to fill."""
    return _graph_class()(run_id=run_id)


# --- metrics ----------------------------------------------------------------------------------------------

# (column, title, style, format): the columns a person reads, in this order; the rest are named below
_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("node_id", "node", _NOWRAP, "code"),
    ("status", "status", _NOWRAP, "status"),
    ("stage", "stage", _NOWRAP, "text"),
    ("task", "task", _WIDE, "task"),
    ("tokens", "tokens", _NUMBER, "int"),
    ("llm_calls", "model calls", _NUMBER, "int"),
    ("duration_ms", "time (s)", _NUMBER, "seconds"),
    ("retrieval_score", "retrieval", _NUMBER, "score"),
    ("context_items", "passages", _NUMBER, "int"),
    ("citations", "citations", _NUMBER, "int"),
    ("error", "error", _NOWRAP, "text"),
    ("cache_hit", "cached", _NOWRAP, "flag"),
)
_HIDDEN = ("run_id", "parent", "depth", "cache_key")  # the same for every row, or shown as indentation


def _metric(kind: str, value: Any, depth: Any) -> str:
    if kind == "code":
        return _indent(depth, f"<code>{_text(value)}</code>")
    if kind == "status":
        return _status(value)
    if kind == "int":
        return _number(value)
    if kind == "seconds":
        return DASH if _missing(value) else f"{float(value) / 1000:.2f}"
    if kind == "score":
        return _number(value, 2)
    if kind == "flag":
        return "✓" if value is True else ""
    return _text(value)


def metrics_html(frame: Any) -> str:
    """A metrics frame (one row per node) as a table a person reads."""
    known = [m for m in _METRICS if m[0] in frame.columns]
    extra = [c for c in frame.columns if c not in {m[0] for m in _METRICS} | set(_HIDDEN)]
    headers = [(title, style) for _, title, style, _ in known] + [(str(c), _CELL) for c in extra]
    records = frame.to_dict("records")
    rows = [
        [_metric(kind, r.get(col), r.get("depth")) for col, _, _, kind in known]
        + [_text(r.get(c)) for c in extra]
        for r in records
    ]
    run_ids = {str(r.get("run_id")) for r in records if not _missing(r.get("run_id"))}
    caption = f"run <code>{html.escape(run_ids.pop())}</code>: " if len(run_ids) == 1 else ""
    caption += f"{len(records)} node{'' if len(records) == 1 else 's'}"
    hidden = [c for c in _HIDDEN if c in frame.columns]
    note = f"also in the DataFrame: {', '.join(hidden)}" if hidden else ""
    return _table(headers, rows, caption=caption, note=note)


@cache
def _metrics_class() -> type:
    import pandas as pd

    class MetricsFrame(pd.DataFrame):
        """One row per node (a ``pandas.DataFrame``) that shows as a readable table."""

        @property
        def _constructor(self) -> Any:
            return pd.DataFrame  # what derives from it (head, a filter) is a plain frame

        def _repr_html_(self) -> str:
            return metrics_html(self)

    MetricsFrame.__module__, MetricsFrame.__qualname__ = __name__, "MetricsFrame"
    return MetricsFrame


def metrics_frame(rows: list[dict[str, Any]]) -> Any:
    """``Run.metrics`` as a ``MetricsFrame``."""
    return _metrics_class()(rows)


# --- search -----------------------------------------------------------------------------------------------

SEARCH_COLUMNS = ["path", "title", "heading", "score", "snippet", "vault"]


def _search_html(frame: Any) -> str:
    from ._links import _link_for

    roots = {k: Path(v) for k, v in (frame.attrs.get("vault_roots") or {}).items()}
    rows = []
    for i, r in enumerate(frame.to_dict("records"), 1):
        path, heading = str(r.get("path") or ""), r.get("heading")
        root = roots.get(str(r.get("vault")))
        uri = file = None
        if path and root is not None and (root / path).is_file():
            uri, file = _link_for(root, path, None if _missing(heading) else str(heading))
        rows.append(
            (
                str(i),
                _link(path.removesuffix(".md"), uri, file),
                _text(heading),
                _number(r.get("score"), 3),
                _text(r.get("snippet")),
                _text(r.get("vault")),
            )
        )
    headers = [
        ("#", _NUMBER), ("note", _NOWRAP), ("heading", _CELL), ("score", _NUMBER), ("snippet", _WIDE),
        ("vault", _NOWRAP),
    ]  # fmt: skip
    query = frame.attrs.get("query")
    caption = f"{len(frame)} hit{'' if len(frame) == 1 else 's'}"
    caption += f" for <i>{html.escape(query)}</i>" if query else ""
    for word, others in (frame.attrs.get("synonyms") or {}).items():
        caption += (
            f"; no note holds <i>{html.escape(word)}</i>: also searched for {html.escape(', '.join(others))}"
        )
    return _table(headers, rows, caption=caption)


@cache
def _search_class() -> type:
    import pandas as pd

    class SearchFrame(pd.DataFrame):
        """Search hits (a ``pandas.DataFrame``: path, title, heading, score, snippet, vault) that show as
        a table with whole snippets and notes as links."""

        @property
        def _constructor(self) -> Any:
            return pd.DataFrame

        def _repr_html_(self) -> str:
            return _search_html(self)

    SearchFrame.__module__, SearchFrame.__qualname__ = __name__, "SearchFrame"
    return SearchFrame


def search_frame(
    hits: Iterable[Any],
    roots: Mapping[str, Path],
    query: str = "",
    synonyms: Mapping[str, list[str]] | None = None,
) -> Any:
    """Vault search hits as a ``SearchFrame``; a hit without a heading has ``""`` (not None, not NaN).
    ``synonyms``: the words of the query no note holds, with the synonyms searched for them."""
    rows = [{c: getattr(h, c) for c in SEARCH_COLUMNS} | {"heading": h.heading or ""} for h in hits]
    frame = _search_class()(rows, columns=SEARCH_COLUMNS)
    # absolute: a file:// link needs it, and the notebook's working folder may change before display
    absolute = {k: str(Path(v).expanduser().resolve()) for k, v in roots.items()}
    frame.attrs.update(vault_roots=absolute, query=query, synonyms=dict(synonyms or {}))
    return frame


_LAZY = {"RunGraph": _graph_class, "MetricsFrame": _metrics_class, "SearchFrame": _search_class}


def __getattr__(name: str) -> Any:
    """``RunGraph``, ``MetricsFrame`` and ``SearchFrame``, made on first use (pickle finds them here)."""
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
