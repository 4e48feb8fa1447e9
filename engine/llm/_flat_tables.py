"""Tables that lost their Markdown. A web page's table clipped into a note often arrives as one cell
per paragraph::

    Quality

    Price

    Cost per use

    Poor

    $5

    $0.50

    Best

    $20

    $0.10

Cell by cell, no line is a quotable sentence ("$0.10" names nothing), so the offline answer could not
quote the row that answers "what is the cost per use of the best pair?". ``rebuild_flat_tables`` turns
such a run back into a Markdown table (``| Best | $20 | $0.10 |`` under ``| Quality | Price | Cost per
use |``), which is then quoted as a table row under its header.

A run of short lines is taken for a table only when exactly one column count fits it: the first row
(the header) holds no number, at least two rows follow, and each column is numbers in every row or in
none, with at least one column of numbers. A list of names, a poem or a caption is left as it is.
"""

from __future__ import annotations

import re

__all__ = ["rebuild_flat_tables"]

MAX_CELL_CHARS = 40
MAX_CELL_WORDS = 6
MAX_COLUMNS = 8
MIN_ROWS = 2  # rows under the header
# "$5", "10", "$0.50", "20%", "3.5 GB", "1,024", "-3 °C": a number, maybe with a currency or a unit
_NUMBER = re.compile(r"[~≈<>±+\-−]?\s?[$€£¥]?\s?\d[\d,.]*\s?(?:%|°?[A-Za-z]{0,3}|°C|°F)?")
_NOT_A_CELL = re.compile(r"^(?:[#>|`!\[]|[-*+]\s|\d{1,3}[.)]\s)|[.!?:;,]$")  # markup, a list item, a sentence


def _is_cell(line: str) -> bool:
    line = line.strip()
    return (
        0 < len(line) <= MAX_CELL_CHARS
        and len(line.split()) <= MAX_CELL_WORDS
        and not _NOT_A_CELL.search(line)
        and "|" not in line
    )


def _numeric(cell: str) -> bool:
    return _NUMBER.fullmatch(cell.strip()) is not None


def _columns(cells: list[str]) -> int | None:
    """The one column count that makes ``cells`` a table (see the module docstring), or None."""
    fits = []
    for k in range(2, MAX_COLUMNS + 1):
        if len(cells) % k or len(cells) // k < 1 + MIN_ROWS:
            continue
        rows = [cells[i : i + k] for i in range(0, len(cells), k)]
        if any(_numeric(c) for c in rows[0]):
            continue
        kinds = [[_numeric(row[j]) for row in rows[1:]] for j in range(k)]
        if all(all(col) or not any(col) for col in kinds) and any(all(col) for col in kinds):
            fits.append(k)
    return fits[0] if len(fits) == 1 else None


def _table(cells: list[str], k: int) -> list[str]:
    rows = [cells[i : i + k] for i in range(0, len(cells), k)]
    lines = ["| " + " | ".join(c.strip() for c in row) + " |" for row in rows]
    return [lines[0], "| " + " | ".join(["---"] * k) + " |", *lines[1:]]


def rebuild_flat_tables(text: str) -> str:
    """``text`` with every run of one-cell paragraphs that is a table (see the module docstring) turned
    into a Markdown table; everything else as it was."""
    lines = text.split("\n")
    if sum(1 for line in lines if _is_cell(line)) < 2 * (1 + MIN_ROWS):
        return text
    out: list[str] = []
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or not _is_cell(line):
            out.append(line)
            i += 1
            continue
        # the run: cells, with blank lines between them (and not after the last)
        j, cells, end = i, [], i
        while j < len(lines) and (_is_cell(lines[j]) or not lines[j].strip()):
            if lines[j].strip():
                cells.append(lines[j])
                end = j + 1
            j += 1
        k = _columns(cells)
        if k is None:
            out.extend(lines[i:end])
        else:
            out.extend(_table(cells, k))
        i = end
    return "\n".join(out)
