"""A report as HTML for notebooks: Obsidian callouts as styled boxes, tables as tables, embeds as the
embedded text, and each citation with its cited passage on hover or click (a popover; the Obsidian and
file links are its second action, so it works on a remote Jupyter server whose browser cannot open
them). The passages come from the run itself (each node kept the sections it retrieved), else from the
note in the vault. The CSS is ``static/report.css``, scoped under ``.shad-report``; no script runs and
nothing is fetched. In an untrusted notebook (JupyterLab's sanitizer drops ``<style>``) the previews stay
hidden and the "Cited passages" list at the end, plain HTML, still shows every passage on a click.

Markdown is rendered by markdown-it-py (CommonMark and tables) with raw HTML off: a note's HTML is shown
as text, never run. Callouts, embeds and citations are cut out first (outside code) and put back as
HTML after rendering, each behind a placeholder markdown leaves alone.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.retrieval.citations import extract_citations

__all__ = ["Passage", "Sources", "render_report"]

CSS_FILE = Path(__file__).with_name("static") / "report.css"
PASSAGE_CHARS = 700  # what a popover shows at most (the footnote shows the same)
_CODE = re.compile(r"(^(```|~~~).*?^\2[^\n]*$|`[^`\n]*`)", re.M | re.S)
_CALLOUT = re.compile(r"^>\s*\[!(\w[\w-]*)\]([+-]?)\s*(.*)$")
_EMBED_LINE = re.compile(r"^\s*!\[\[([^\[\]\n]+)\]\]\s*$")
_EMBED = re.compile(r"!\[\[([^\[\]\n]+)\]\]")
_WIKI = re.compile(r"\[\[([^\[\]\n]+)\]\]")
_PLACE = re.compile(r"SHAD(BLOCK|CITE)(\d+)X")
_ICONS = {"note": "✎", "info": "ℹ", "tip": "💡", "warning": "⚠", "danger": "⛔", "quote": "❝", "example": "▸"}


@dataclass
class Passage:
    where: str  # "Note › Heading"
    text: str
    uri: str | None = None  # obsidian://
    file: str | None = None  # file://


def _plain(text: str) -> str:
    """Markdown of a note as a reader sees it: wikilinks as their labels, no block ids or heading marks."""
    text = _WIKI.sub(_label, text)
    text = re.sub(r"\s\^[\w-]+$", "", text, flags=re.M)
    text = re.sub(r"^#{1,6}\s+.*$", "", text, flags=re.M)  # the popover names the heading
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _label(m: re.Match[str]) -> str:
    target, _, alias = m.group(1).partition("|")
    return alias or target.split("#")[0].rsplit("/", 1)[-1] or target


def _window(text: str, claim: str) -> tuple[str, str, str]:
    """(before, the claim as found, after) around where the claim is quoted, at most PASSAGE_CHARS;
    the passage keeps its lines (a table stays rows), the claim is matched whatever its spacing."""
    words = claim.strip(" .;:,!?*_").split()
    found = None
    for probe in (words, words[:8]):
        if len(" ".join(probe)) > 12:
            found = re.search(r"\s+".join(map(re.escape, probe)), text)
            if found:
                break
    if found is None:
        return (text[:PASSAGE_CHARS] + (" …" if len(text) > PASSAGE_CHARS else "")), "", ""
    at, end = found.span()
    room = max(0, (PASSAGE_CHARS - (end - at)) // 2)
    start, stop = max(0, at - room), min(len(text), end + room)
    before = ("… " if start else "") + text[start:at]
    return before, text[at:end], text[end:stop] + (" …" if stop < len(text) else "")


class Sources:
    """Where a citation's passage comes from: the sections the run's nodes retrieved, else the note's
    file under its vault folder; and its links (``link``: (obsidian URI, file URI) or None)."""

    def __init__(
        self,
        run: Any,
        roots: dict[str, Path],
        link: Callable[[Any], tuple[str, str] | None],
    ) -> None:
        self._roots = roots
        self._link = link
        self._sections: dict[tuple[str, str], str] = {}
        for node in getattr(run, "dag", ()) or ():
            retrieval = getattr(node, "retrieval", None) or {}
            for item in retrieval.get("context") or ():
                if isinstance(item, dict) and isinstance(item.get("text"), str) and item.get("path"):
                    key = (_note_key(str(item["path"])), str(item.get("heading") or "").lower())
                    self._sections.setdefault(key, item["text"])

    def passage(self, cite: Any) -> Passage | None:
        key = _note_key(cite.path)
        heading = (cite.heading or "").lower()
        text = self._sections.get((key, heading))
        if text is None and not heading:
            text = next((t for (k, _), t in self._sections.items() if k == key), None)
        if text is None:
            text = self._from_file(cite.path, cite.heading)
        if text is None:
            return None
        links = self._link(cite)
        where = cite.path.rsplit("/", 1)[-1] + (f" › {cite.heading}" if cite.heading else "")
        return Passage(where, _plain(text), *(links or (None, None)))

    def _from_file(self, path: str, heading: str | None) -> str | None:
        for root in self._roots.values():
            note = _find_note(str(root), path)
            if note is not None:
                return _section(note.read_text(encoding="utf-8", errors="replace"), heading)
        return None


def _note_key(path: str) -> str:
    path = path.replace("\\", "/").lower()
    return path[:-3] if path.endswith(".md") else path


@lru_cache(maxsize=256)
def _find_note(root: str, path: str) -> Path | None:
    """The note a link names: its vault-relative path, else (as Obsidian resolves a bare name) the
    first note of that name anywhere in the vault."""
    base = Path(root)
    name = path if path.lower().endswith(".md") else path + ".md"
    direct = base / name
    if direct.is_file():
        return direct
    found = sorted(base.rglob(Path(name).name))
    return found[0] if found else None


def _section(text: str, heading: str | None) -> str:
    """The text under ``heading`` (to the next heading of the same or a higher level), or the note."""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        text = text[end + 4 :] if end != -1 else text
    if not heading:
        return text.strip()[:4000]
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^(#{1,6})\s+(.*?)\s*$", line)
        if m and m.group(2).strip().lower() == heading.strip().lower():
            level, out = len(m.group(1)), []
            for later in lines[i + 1 :]:
                n = re.match(r"^(#{1,6})\s", later)
                if n and len(n.group(1)) <= level:
                    break
                out.append(later)
            return "\n".join(out).strip()[:4000]
    return text.strip()[:4000]


def _css() -> str:
    return CSS_FILE.read_text(encoding="utf-8")


class _Renderer:
    def __init__(self, sources: Sources, run_id: str) -> None:
        self.sources = sources
        self.run_id = re.sub(r"[^\w-]", "", run_id) or "run"
        self.blocks: list[str] = []
        self.cites: list[str] = []
        self.numbers: dict[str, int] = {}
        self.footnotes: list[tuple[int, Passage]] = []

    # --- markdown -> html --------------------------------------------------------------------------

    def markdown(self, text: str, depth: int = 0) -> str:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])
        rendered = md.render(self._cut(text, depth))
        rendered = re.sub(r"<p>SHADBLOCK(\d+)X</p>", lambda m: self.blocks[int(m.group(1))], rendered)
        return _PLACE.sub(lambda m: self.cites[int(m.group(2))] if m.group(1) == "CITE" else "", rendered)

    def _cut(self, text: str, depth: int) -> str:
        """Callouts and embeds (whole lines) and citations become placeholders, outside code."""
        pieces, at = [], 0
        for m in _CODE.finditer(text):
            pieces.append(self._inline(self._blocks(text[at : m.start()], depth), depth))
            pieces.append(m.group(0))
            at = m.end()
        pieces.append(self._inline(self._blocks(text[at:], depth), depth))
        return "".join(pieces)

    def _hold(self, html_text: str) -> str:
        self.blocks.append(html_text)
        return f"\n\nSHADBLOCK{len(self.blocks) - 1}X\n\n"

    def _blocks(self, text: str, depth: int) -> str:
        lines, out, i = text.split("\n"), [], 0
        while i < len(lines):
            callout = _CALLOUT.match(lines[i])
            embed = _EMBED_LINE.match(lines[i])
            if callout:
                body = []
                i += 1
                while i < len(lines) and lines[i].startswith(">"):
                    body.append(re.sub(r"^>\s?", "", lines[i]))
                    i += 1
                kind, fold, title = callout.group(1), callout.group(2), callout.group(3)
                out.append(self._hold(self._callout(kind, fold, title, "\n".join(body), depth)))
                continue
            if embed and depth == 0:
                out.append(self._hold(self._embed(embed.group(1), depth)))
            else:
                out.append(lines[i])
            i += 1
        return "\n".join(out)

    def _callout(self, kind: str, fold: str, title: str, body: str, depth: int) -> str:
        kind = kind.lower()
        title_html = html.escape(title.strip() or kind.capitalize())
        icon = html.escape(_ICONS.get(kind, "✎"))
        inner = self.markdown(body, depth + 1) if body.strip() else ""
        cls = f"shad-callout shad-callout--{html.escape(kind)}"
        head = f'<span class="shad-callout__title" data-icon="{icon}">{title_html}</span>'
        if fold:
            opened = " open" if fold == "+" else ""
            return f'<details class="{cls}"{opened}><summary>{head}</summary>{inner}</details>'
        return f'<div class="{cls}"><div>{head}</div>{inner}</div>'

    def _embed(self, target: str, depth: int) -> str:
        found = extract_citations(f"[[{target}]]")
        passage = self.sources.passage(found[0]) if found else None
        label = html.escape(target.split("|")[-1])
        if passage is None:
            return f'<p class="shad-embed shad-embed--missing">{label}</p>'
        title = f'<a href="{html.escape(passage.uri)}">{label}</a>' if passage.uri else label
        body = self.markdown(passage.text[:4000], depth + 1)
        return f'<div class="shad-embed"><div class="shad-embed__title">{title}</div>{body}</div>'

    def _inline(self, text: str, depth: int) -> str:
        text = _EMBED.sub(lambda m: f"[[{m.group(1)}]]", text)  # an inline embed cites like a link
        out = []
        for line in text.split("\n"):
            pieces, at = [], 0
            for m in _WIKI.finditer(line):  # a citation's claim: the text since the previous one
                claim = re.sub(r"^\s*(?:[-*+>]|\d+[.)]|\|)\s*", "", line[at : m.start()]).strip(" |")
                pieces += [line[at : m.start()], self._cite(m.group(0), claim or line)]
                at = m.end()
            out.append("".join(pieces) + line[at:])
        return "\n".join(out)

    def _cite(self, raw: str, claim: str) -> str:
        found = extract_citations(raw)
        if not found:
            return raw
        cite = found[0]
        # The note's name (and heading) as the label: its folders are in the popover's links.
        label = html.escape(cite.alias or raw[2:-2].split("|")[0].rsplit("/", 1)[-1])
        passage = self.sources.passage(cite)
        if passage is None:  # nothing to preview (a context vault that is gone): the name stays
            self.cites.append(f'<span class="shad-cite shad-cite--missing">{label}</span>')
            return f"SHADCITE{len(self.cites) - 1}X"
        n = self.numbers.get(raw)
        if n is None:
            n = self.numbers[raw] = len(self.numbers) + 1
            self.footnotes.append((n, passage))
        before, quoted, after = _window(passage.text, claim)
        text = (
            html.escape(before)
            + (f"<mark>{html.escape(quoted)}</mark>" if quoted else "")
            + html.escape(after)
        )
        actions = "".join(
            f'<a href="{html.escape(url)}"{extra}>{name}</a>'
            for url, name, extra in (
                (passage.uri, "Open in Obsidian", ""),
                (passage.file, "file", ' target="_blank"'),
            )
            if url
        )
        self.cites.append(
            f'<span class="shad-cite" tabindex="0">'
            f'<span class="shad-cite__label">{label}</span>'
            f'<sup><a href="#shad-fn-{self.run_id}-{n}">{n}</a></sup>'
            # ``hidden``: an untrusted notebook's sanitizer drops the <style>; the previews then stay
            # hidden (the "Cited passages" list below still opens each) instead of filling the text.
            f'<span class="shad-cite__pop" role="tooltip" hidden>'
            f'<span class="shad-cite__where">{html.escape(passage.where)}</span>'
            f'<span class="shad-cite__text">{text}</span>'
            f'<span class="shad-cite__actions">{actions}</span></span></span>'
        )
        return f"SHADCITE{len(self.cites) - 1}X"

    def sources_html(self) -> str:
        if not self.footnotes:
            return ""
        items = []
        for n, p in self.footnotes:
            link = f'<a href="{html.escape(p.uri)}">Open in Obsidian</a>' if p.uri else ""
            short = p.text[:PASSAGE_CHARS] + (" …" if len(p.text) > PASSAGE_CHARS else "")
            items.append(  # the summary only toggles: the Obsidian link is inside, after the passage
                f'<li id="shad-fn-{self.run_id}-{n}"><details><summary>{html.escape(p.where)}</summary>'
                f"<blockquote>{html.escape(short)}</blockquote>{link}</details></li>"
            )
        return f'<div class="shad-sources"><strong>Cited passages</strong><ol>{"".join(items)}</ol></div>'


def render_report(markdown: str, sources: Sources, run_id: str) -> str:
    """The report (Markdown without frontmatter, wikilink citations) as one self-contained HTML block."""
    renderer = _Renderer(sources, run_id)
    body = renderer.markdown(markdown)
    return f'<div class="shad-report"><style>{_css()}</style>{body}{renderer.sources_html()}</div>'
