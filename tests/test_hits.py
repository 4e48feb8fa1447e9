"""What a hit shows (``engine/vault/_hits.py``): the passages it reads, the same as the full-text table
holds them."""

from __future__ import annotations

import pytest

from engine import Vault
from engine.vault._hits import Candidate, meta_and_passages, read_passages, shown_rowids
from engine.vault._index import CHUNK_BITS

pytestmark = pytest.mark.usefixtures("shad_home")


def test_passages_are_read_as_the_full_text_table_holds_them(demo: Vault) -> None:
    """Passages are read from FTS5's content table, by rowid: each one's heading, text and heading trail
    must be what ``fts`` gives for that rowid (a wrong column, or a rowid read as another, shows here)."""
    index = demo.index
    expected = {
        rowid: (heading, body, trail or "")
        for rowid, heading, body, trail in index.query("SELECT rowid, heading, body, headings FROM fts")
    }
    assert len(expected) > 50 and any(h for h, _, _ in expected.values())
    assert any(trail and " > " in trail for _, _, trail in expected.values())  # a nested heading's trail
    rowids = sorted(expected)
    assert read_passages(index, rowids) == expected
    assert read_passages(index, [rowids[3], rowids[0], max(rowids) + 1]) == {
        r: expected[r] for r in (rowids[0], rowids[3])
    }


def test_a_hits_fields_and_passages_in_one_read(demo: Vault) -> None:
    """``meta_and_passages`` fills in each note's fields and returns the passages its first notes show;
    a note that is not there is dropped."""
    index = demo.index
    fids = [fid for (fid,) in index.query("SELECT id FROM files WHERE is_note = 1 ORDER BY id LIMIT 3")]
    lo = fids[0] << CHUNK_BITS
    candidates = {
        fids[0]: Candidate(fids[0], lo + 1, 1.0),
        fids[1]: Candidate(fids[1], -1, 0.5),
        10**6: Candidate(10**6, -1, 0.1),  # no such note
    }
    first = list(candidates.values())[:2]
    passages = meta_and_passages(index, candidates, first, "f.is_note = 1", [])
    assert set(candidates) == {fids[0], fids[1]}
    path, title = index.query("SELECT path, title FROM files WHERE id = ?", (fids[0],))[0]
    assert (candidates[fids[0]].path, candidates[fids[0]].title) == (path, title)
    wanted = [r for c in first for r in shown_rowids(c)]
    assert passages == read_passages(index, wanted)
    assert passages and set(passages) <= set(wanted)
