"""Link resolution the way Obsidian does it, and the vault's link graph (networkx).

Order: an exact vault path; a path relative to the linking note's folder; a path suffix or bare file
name; then an alias. When a name matches several files Obsidian picks the one in the linking note's own
folder, else the shallowest, else the first by path; we do the same and record the other candidates.
"""

from __future__ import annotations

import json
import posixpath
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._parse import RELATION_FIELDS

if TYPE_CHECKING:  # networkx takes ~0.3 s to import: only when a graph is built
    import networkx as nx

__all__ = ["LinkGraph", "Resolver", "UnresolvedLink", "add_link_edge"]


@dataclass(frozen=True)
class UnresolvedLink:
    source: str
    target: str
    line: int
    kind: str


class Resolver:
    """Resolves link targets against a fixed set of vault files (held in memory). The lookups are methods,
    so that the index can answer them from its tables instead (``_links.IndexResolver``)."""

    def __init__(self, files: list[str], aliases: dict[str, list[str]]) -> None:
        self.exact: dict[str, str] = {}
        self.by_name: dict[str, list[str]] = defaultdict(list)
        self.by_alias: dict[str, list[str]] = defaultdict(list)
        for path in files:
            low = path.lower()
            self.exact[low] = path
            name = low.rsplit("/", 1)[-1]
            self.by_name[name].append(path)
            if low.endswith(".md"):
                self.by_name[name[:-3]].append(path)
        for path, names in aliases.items():
            for alias in names:
                self.by_alias[alias.lower()].append(path)

    def resolve(self, target: str, source: str | None = None) -> tuple[str | None, list[str]]:
        """Return (path or None, other candidates when the choice was ambiguous)."""
        if target == "":
            return source, []
        t = target.strip().replace("\\", "/")
        src_dir = posixpath.dirname(source) if source else ""
        if t.startswith(("./", "../")):
            joined = posixpath.normpath(posixpath.join(src_dir, t))
            return self._exact(joined), []
        t = t.lstrip("/")
        found = self._exact(t)
        if found:
            return found, []
        if src_dir and "/" in t:  # a bare name in the note's own folder is ranked below, with the others
            found = self._exact(f"{src_dir}/{t}")
            if found:
                return found, []
        low = t.lower()
        if "/" in low:
            tail = "/" + low
            candidates = [
                p
                for p in self._named(low.rsplit("/", 1)[-1])
                if p.lower().endswith(tail) or p.lower().endswith(tail + ".md")
            ]
        else:
            candidates = list(self._named(low))
        if not candidates:
            candidates = list(self._aliased(low))
        if not candidates:
            return None, []
        candidates = sorted(set(candidates), key=lambda p: (posixpath.dirname(p) != src_dir, p.count("/"), p))
        return candidates[0], candidates[1:]

    def _exact(self, path: str) -> str | None:
        low = path.lower()
        return self._exact_lower(low) or self._exact_lower(low + ".md")

    def _exact_lower(self, low: str) -> str | None:
        """The file whose lower-cased path is ``low`` (the last indexed, when case alone tells two apart)."""
        return self.exact.get(low)

    def _named(self, low: str) -> list[str]:
        """Files whose lower-cased name (or a note's name without ``.md``) is ``low``."""
        return self.by_name.get(low, [])

    def _aliased(self, low: str) -> list[str]:
        """Notes with the lower-cased alias ``low``."""
        return self.by_alias.get(low, [])


def add_link_edge(graph: Any, source: str, target: str, kind: str, embed: bool, relation: str | None) -> None:
    """One link from ``source`` to ``target`` in a networkx graph: an edge of kind ``embed`` or ``link``
    (wikilink and markdown links are one kind), counted, with the frontmatter relations it carries."""
    edge_kind = "embed" if embed else ("link" if kind in ("wikilink", "markdown") else kind)
    if graph.has_edge(source, target):
        data = graph.edges[source, target]
        data["count"] += 1
        if relation:
            data.setdefault("relations", set()).add(relation)
    else:
        graph.add_edge(
            source, target, kind=edge_kind, count=1, **({"relations": {relation}} if relation else {})
        )


@dataclass
class LinkGraph:
    """Notes as nodes, links as edges (``kind``: link, embed, frontmatter, or a typed ``relation``)."""

    graph: nx.DiGraph
    resolver: Resolver
    unresolved: list[UnresolvedLink] = field(default_factory=list)
    ambiguous: list[dict[str, Any]] = field(default_factory=list)
    link_count: int = 0

    @classmethod
    def build(cls, rows: list[tuple[str, int, str | None, str | None, str | None, str | None]]) -> LinkGraph:
        """``rows``: (path, is_note, title, type, aliases json, links json) for every file."""
        import networkx as nx

        aliases = {path: json.loads(a) for path, is_note, _t, _ty, a, _l in rows if is_note and a}
        resolver = Resolver([r[0] for r in rows], aliases)
        graph = nx.DiGraph()
        for path, is_note, title, ntype, _a, _l in rows:
            if is_note:
                graph.add_node(path, title=title, type=ntype)
        result = cls(graph, resolver)
        for path, is_note, _t, _ty, _a, links_json in rows:
            if not is_note or not links_json:
                continue
            for link in json.loads(links_json):
                result.link_count += 1
                target, others = resolver.resolve(link["target"], path)
                if target is None:
                    result.unresolved.append(
                        UnresolvedLink(
                            path, link["target"], link.get("line", 0), link.get("kind", "wikilink")
                        )
                    )
                    continue
                if others:
                    result.ambiguous.append(
                        {
                            "source": path,
                            "target": link["target"],
                            "chose": target,
                            "candidates": [target, *others],
                        }
                    )
                if target == path or target not in graph:
                    continue  # self links and links to attachments are not graph edges
                relation = link.get("field") if link.get("field") in RELATION_FIELDS else None
                add_link_edge(
                    graph, path, target, link.get("kind", "wikilink"), bool(link.get("embed")), relation
                )
        return result

    def backlinks(self, path: str) -> list[str]:
        return sorted(self.graph.predecessors(path)) if path in self.graph else []

    def neighbors(self, path: str, depth: int = 1) -> list[str]:
        """Notes reachable from ``path`` within ``depth`` hops, following links in either direction."""
        if path not in self.graph or depth < 1:
            return []
        seen = {path}
        frontier = {path}
        for _ in range(depth):
            nxt: set[str] = set()
            for node in frontier:
                nxt.update(self.graph.successors(node))
                nxt.update(self.graph.predecessors(node))
            frontier = nxt - seen
            seen |= frontier
            if not frontier:
                break
        seen.discard(path)
        return sorted(seen)
