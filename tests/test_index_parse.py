"""engine/vault/_index.py's ``_parse_one``: a note as the index stores it, made from the note's plain parts,
is what it was made from the parsed ``Note`` and its ``Chunk`` objects."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from _crafted_notes import crafted_notes

from engine.vault import _index
from engine.vault._index_db import name_key
from engine.vault._links import tail_key
from engine.vault._parse import RELATION_FIELDS, parse_for_index
from engine.vault._scan import FileEntry


def _from_objects(root: str, entry: FileEntry) -> tuple[Any, ...]:
    """What ``_parse_one`` made of a note from its ``Note`` and ``Chunk`` objects (all but the entry)."""
    raw = Path(root, entry.path).read_bytes()
    note, chunks = parse_for_index(entry.path, raw, mtime=entry.mtime_ns / 1e9)
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    frontmatter = note.frontmatter
    row = (
        note.hash,
        note.title,
        note.type,
        dumps(note.tags),
        dumps(note.aliases),
        dumps(frontmatter),
        dumps([d.__dict__ for d in note.diagnostics]),
    )
    title_extra = frontmatter.get("title") if frontmatter else None
    extra = [str(title_extra)] if title_extra else []
    aliases = " ; ".join([*note.aliases, *extra]) if note.aliases or extra else ""
    props = _index._props(frontmatter) if frontmatter else ""
    names = (note.title, aliases, " ".join(note.tags), " ; ".join(h.text for h in note.headings), props)
    stem = entry.path.rsplit("/", 1)[-1]
    stem = stem[:-3] if stem.lower().endswith(".md") else stem
    keys = {name_key(n) for n in (stem, note.title, *note.aliases, *extra)}
    keys.discard("")
    links = [
        (
            link.target,
            tail_key(link.target),
            link.line,
            link.kind,
            1 if link.embed else 0,
            link.field if link.field in RELATION_FIELDS else None,
        )
        for link in note.links
    ]
    chunk_rows = [(c.trail, c.text, c.heading) for c in chunks]
    return (note.hash, row, names, chunk_rows, note.tags, sorted(keys), note.aliases, links)


def test_a_note_as_the_index_stores_it_is_made_from_its_parts_as_from_its_objects(tmp_path: Path) -> None:
    names = ["n.md", "Übung 1.md", "a.b.MD", "title.md"]
    for i, raw in enumerate(crafted_notes(300)):
        path = tmp_path / f"d{i % 7}" / names[i % len(names)]
        path.parent.mkdir(exist_ok=True)
        if i % 11 == 0:  # (a title that differs from the file's name: another key)
            raw = b"---\ntitle: Other Name\naliases: [A, b.md]\n---\n" + raw
        path.write_bytes(raw)
        rel = path.relative_to(tmp_path).as_posix()
        stat = os.stat(path)
        entry = FileEntry(rel, stat.st_size, stat.st_mtime_ns, True)
        parsed = _index._parse_one((str(tmp_path), entry, None))
        assert parsed.entry == entry
        assert repr(tuple(parsed)[1:]) == repr(_from_objects(str(tmp_path), entry)), raw


def test_dumps_writes_what_json_dumps_writes() -> None:
    values: list[Any] = [
        [],
        {},
        ["a", "é", "日本", 'q"\\', "\n\t\x00\u2028"],
        {"k": [1, 2.5, 1e20, -0.0, True, None], "n": {"x": "y"}, "big": 10**30},
        [{"code": "x", "message": "m", "severity": "warning"}],
        "text",
    ]
    for value in values:
        assert _index._dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
