"""``--context``: notebook data as extra vault notes, so a run can cite it like any other note.

DataFrames become markdown table notes (a section per block of rows, so a citation names the rows it
used), strings become notes, files are copied (non-markdown text is wrapped in a note), and a folder of
``.md`` files is used as a vault as it is. The generated notes live in a temporary vault named
``context``, added after the user's vaults; ``ContextVaults.cleanup()`` removes it and its index.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import ShadUsageError

__all__ = ["ROWS_PER_SECTION", "ContextVaults", "build_context", "frame_note"]

ROWS_PER_SECTION = 50
MAX_ROWS = 5000  # a note of ~1 MB is skipped by the indexer: a huge frame is cut, and says so
MAX_TEXT = 900_000
ABOUT = "About this context.md"


@dataclass
class ContextVaults:
    """The extra vault folders for a run (in order), and what to delete when the run is over."""

    dirs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # vault-relative paths written into the temp vault
    temp_root: Path | None = None

    def cleanup(self) -> None:
        """Delete the temporary vault and the search index the engine built for it."""
        if self.temp_root is None:
            return
        vault = self.temp_root / "context"
        if vault.is_dir():
            with contextlib.suppress(Exception):  # the index is a cache: leaving it is harmless
                from engine.vault import VaultIndex

                index = VaultIndex(str(vault))
                db = index.db_path
                index.close()
                for suffix in ("", "-wal", "-shm", ".lock"):
                    Path(f"{db}{suffix}").unlink(missing_ok=True)
        shutil.rmtree(self.temp_root, ignore_errors=True)
        self.temp_root = None


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def frame_note(name: str, frame: Any) -> str:
    """A DataFrame (or Series) as a note: a table per block of ``ROWS_PER_SECTION`` rows, each under
    its own heading, the header row repeated."""
    import pandas as pd

    if isinstance(frame, pd.Series):
        frame = frame.to_frame(name=frame.name if frame.name is not None else name)
    total = len(frame)
    shown = frame.iloc[:MAX_ROWS]
    index_name = _cell(shown.index.name or "")
    header = "| " + " | ".join([index_name] + [_cell(c) for c in shown.columns]) + " |"
    rule = "|" + "---|" * (len(shown.columns) + 1)
    parts = [
        "---",
        "type: context",
        f"source: notebook variable {name}",
        f"rows: {total}",
        "---",
        "",
        f"# {name}",
        "",
        f"A table of {total} rows; columns: {', '.join(_cell(c) for c in frame.columns)}.",
        "",
    ]
    if total > MAX_ROWS:
        parts += [f"(Only the first {MAX_ROWS} of {total} rows are included.)", ""]
    for start in range(0, len(shown), ROWS_PER_SECTION):
        block = shown.iloc[start : start + ROWS_PER_SECTION]
        parts += [f"## Rows {start + 1}-{start + len(block)}", "", header, rule]
        for idx, row in zip(block.index, block.itertuples(index=False)):
            parts.append("| " + " | ".join([_cell(idx)] + [_cell(v) for v in row]) + " |")
        parts.append("")
    return "\n".join(parts)


def _text_note(name: str, text: str, source: str) -> str:
    if len(text) > MAX_TEXT:
        raise ShadUsageError(
            f"--context {name} is {len(text)} characters, too large for one note",
            hint="pass a folder of notes instead, or a smaller excerpt",
        )
    return f"---\ntype: context\nsource: {source}\n---\n\n# {name}\n\n{text.rstrip()}\n"


def _unique(folder: Path, stem: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in " ._-" else "_" for ch in stem).strip(" .") or "context"
    target, n = folder / f"{safe}.md", 2
    while target.exists():
        target, n = folder / f"{safe} {n}.md", n + 1
    return target


def _file_note(path: Path) -> str:
    if path.suffix.lower() == ".csv":
        import pandas as pd

        try:
            return frame_note(path.name, pd.read_csv(path))
        except Exception as exc:
            raise ShadUsageError(f"--context {path}: cannot read it as CSV ({exc})") from exc
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ShadUsageError(
            f"--context {path} is not a UTF-8 text file", hint="pass text, markdown or CSV files"
        ) from exc
    if path.suffix.lower() == ".md":
        return text
    return _text_note(path.name, text, f"file {path}")


def _about(notes: list[str]) -> str:
    """The context vault's own description. Its sections also give the search index enough passages:
    BM25 scores every word of a one-passage vault as if it were common (its IDF collapses to zero), so a
    lone context note would never rank."""
    listing = "\n".join(f"- [[{n[:-3]}]]" for n in notes)
    return (
        "---\ntype: context\n---\n\n# About this context\n\n"
        "## What this vault is\n\nA temporary vault made for one Shad run from the data a notebook passed "
        "with --context.\n\n"
        "## Where the notes come from\n\nTables are DataFrames written as markdown tables, a section per "
        "block of rows; texts are strings or files copied as notes.\n\n"
        "## How it is cited\n\nCitations into it name the vault context, like any other vault of the "
        "run.\n\n"
        "## How long it lives\n\nIt is deleted when the run ends; the run's history keeps the "
        f"report.\n\n## Notes\n\n{listing}\n"
    )


def _has_notes(folder: Path) -> bool:
    return any(p.suffix.lower() == ".md" for p in folder.rglob("*.md"))


def build_context(items: Sequence[tuple[str, Any]]) -> ContextVaults:
    """``items`` are (name, value) pairs: a DataFrame/Series, a string, or a path (``os.PathLike``) to a
    file or a folder. Raises ``ShadUsageError`` (after removing anything it wrote) for what cannot be
    context."""
    import pandas as pd

    out = ContextVaults()
    folders: list[str] = []
    try:
        for name, value in items:
            if isinstance(value, (pd.DataFrame, pd.Series)):
                out.notes.append(_write(out, name, frame_note(name, value)))
            elif isinstance(value, str):
                out.notes.append(_write(out, name, _text_note(name, value, f"notebook variable {name}")))
            elif isinstance(value, os.PathLike):
                path = Path(value).expanduser()
                if path.is_dir():
                    if not _has_notes(path):
                        raise ShadUsageError(
                            f"--context folder {path} holds no .md notes", hint="pass a folder of notes"
                        )
                    folders.append(str(path.resolve()))
                elif path.is_file():
                    stem = path.stem if path.suffix.lower() == ".md" else path.name
                    out.notes.append(_write(out, stem, _file_note(path)))
                else:
                    raise ShadUsageError(f"--context {path}: no such file or folder")
            else:
                raise ShadUsageError(
                    f"--context {name} is a {type(value).__name__}",
                    hint="context is a DataFrame, a string, or the path of a file or folder",
                )
    except BaseException:
        out.cleanup()
        raise
    if out.temp_root is not None:
        (out.temp_root / "context" / ABOUT).write_text(_about(out.notes), encoding="utf-8")
        out.dirs.append(str(out.temp_root / "context"))
    out.dirs += folders
    return out


def _write(out: ContextVaults, name: str, text: str) -> str:
    if out.temp_root is None:
        out.temp_root = Path(tempfile.mkdtemp(prefix="shad-context-"))
        (out.temp_root / "context").mkdir()
    target = _unique(out.temp_root / "context", name)
    target.write_text(text, encoding="utf-8")
    return target.name
