"""How the CLI writes to a terminal and to a pipe, so that nothing is ever cut (a citation, a path).

Rich crops every line of a layout (a Markdown list, a tree, a table) at the console's width when it
does not wrap (``soft_wrap``), and breaks plain lines with real newlines when it does. So:

- a line (a status, a path, a citation) is printed with ``soft_wrap``: never wrapped by us, never cut;
  a terminal wraps it for the eye and still copies it whole, a pipe gets it on one line;
- a layout on a terminal is wrapped by rich at word boundaries, a word longer than the line folded;
- a layout anywhere else (a pipe, a file) is plain text in full lines, as wide as they are; Markdown is
  written as its source;
- a Markdown table on a terminal folds a word too long for its column instead of ending it in ``…``.
"""

from __future__ import annotations

import io
from typing import Any, ClassVar

import click
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Markdown, MarkdownElement, TableElement
from rich.table import Table

__all__ = ["plain", "shorten", "show", "show_markdown"]

# Wide enough for any line of a report or a tree; rich lays a layout out at the width it is given, and
# only pads table cells to it (the padding is stripped).
_WIDE = 10_000


class _FoldingTable(TableElement):
    """A Markdown table whose cells fold a word too long for their column (rich cuts it with ``…``:
    a report's table row would lose the end of its citation)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for part in super().__rich_console__(console, options):
            if isinstance(part, Table):
                for column in part.columns:
                    column.overflow = "fold"
            yield part


class _Markdown(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {**Markdown.elements, "table_open": _FoldingTable}


def plain(renderable: Any) -> str:
    """``renderable`` as plain text, no colour, every line whole and without trailing spaces."""
    buffer = io.StringIO()
    Console(file=buffer, width=_WIDE, color_system=None, highlight=False, emoji=False).print(renderable)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def show(console: Console, renderable: Any) -> None:
    """A layout: wrapped at word boundaries on a terminal, full plain lines anywhere else."""
    if console.is_terminal:
        console.print(renderable, soft_wrap=False, overflow="fold")
    else:
        click.echo(plain(renderable), err=console.stderr)


def show_markdown(console: Console, text: str) -> None:
    """Markdown: rendered (and wrapped at word boundaries) on a terminal, its source anywhere else."""
    if console.is_terminal:
        console.print(_Markdown(text), soft_wrap=False, overflow="fold")
    else:
        click.echo(text, err=console.stderr)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary with ``…`` when longer than ``limit`` (never a word
    cut in half, unless a single word is longer than the limit, and never inside a ``[[wikilink]]``)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[:limit]  # a space at the limit ends a whole word: the cut keeps it
    cut = head.rsplit(" ", 1)[0] if " " in head else head[: limit - 1]
    if cut.count("[[") > cut.count("]]"):  # never half a wikilink: stop before the one left open
        cut = cut[: cut.rfind("[[")]
    return cut.rstrip(" ,;:") + "…"
