"""``engine.vault._statements``: the BM25 ranking statements of a search (passages, names, whole notes),
the pairs query of a question, the budget of whole-note words and the notes a date names."""

from __future__ import annotations

from pathlib import Path

import pytest
from _demo import write_vault

from engine import Vault
from engine.text import parse_query
from engine.vault import _statements
from engine.vault._counts import count_clauses, phrase
from engine.vault._hits import Candidate
from engine.vault._index import CHUNK_BITS
from engine.vault._statements import (
    NAME_SCORE_WEIGHT,
    NO_FILTER,
    SECOND_PASSAGE_WEIGHT,
    dated_notes,
    fetch_names,
    fetch_passages,
    pairs,
    rank_whole_notes,
    within_budget,
)

pytestmark = pytest.mark.usefixtures("shad_home")
SECTIONS = ("Firing", "Glaze", "Cones")


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    notes: dict[str, str | bytes] = {
        "kiln.md": "# Kiln\n\n" + "\n\n".join(f"## {h}\n\n" + f"{h} and clay. " * 20 for h in SECTIONS),
        "wheel.md": "# Wheel\n\nThrowing clay on the wheel.\n",
        "glaze.md": "---\naliases: [Glazing]\n---\n# Glaze\n\nA glaze melts in the kiln.\n",
        "2022-08-20 Firing log.md": "Fired the kiln.\n",
        "2022-08-21 Firing log.md": "Fired it again.\n",
    }
    for i in range(4):
        notes[f"misc {i}.md"] = f"Clay note {i}.\n"
    v = Vault(write_vault(tmp_path, notes))
    v.refresh()
    return v


def _fid(vault: Vault, path: str) -> int:
    return int(vault.index.query("SELECT id FROM files WHERE path = ?", (path,))[0][0])


def test_pairs_finds_passages_with_two_of_the_words(vault: Vault) -> None:
    parsed = parse_query("kiln glaze wheel")
    clauses = parsed.clauses()
    match = pairs(clauses, parsed)
    assert match.count(" OR ") == 2 and all(match.count(c) == 2 for c in clauses)  # each clause once a pair
    found: dict[int, Candidate] = {}
    fetch_passages(vault.index, match, NO_FILTER, [], 20, found)
    assert _fid(vault, "wheel.md") not in found  # "clay on the wheel": one of the three words
    assert {_fid(vault, "kiln.md"), _fid(vault, "glaze.md")} <= set(found)


def test_a_second_passage_adds_a_share_and_a_third_nothing(vault: Vault) -> None:
    index = vault.index
    kiln = _fid(vault, "kiln.md")
    found: dict[int, Candidate] = {}
    fetch_passages(index, phrase("clay"), NO_FILTER, [], 20, found)
    rows = index.query(
        "SELECT rowid, bm25(fts, 2.0, 1.0, 0.0) AS s FROM fts WHERE fts MATCH ? AND rowid >= ? AND rowid < ? "
        "ORDER BY s",
        (phrase("clay"), kiln << CHUNK_BITS, (kiln + 1) << CHUNK_BITS),
    )
    assert len(rows) == 3  # the kiln note's three sections hold "clay"
    first, second = -rows[0][1], -rows[1][1]
    assert found[kiln].score == pytest.approx(first + SECOND_PASSAGE_WEIGHT * second)
    assert found[kiln].chunk == rows[0][0]  # the best passage is the one the hit shows
    sample: dict[int, Candidate] = {}
    fetch_passages(index, phrase("clay"), NO_FILTER, [], 2, sample, ranked=False)
    assert len(sample) <= 2 and all(c.score == 1.0 for c in sample.values())  # unranked: -(-1.0)


def test_names_add_their_scaled_score(vault: Vault) -> None:
    index = vault.index
    glaze = _fid(vault, "glaze.md")
    alone: dict[int, Candidate] = {}
    fetch_names(index, phrase("glazing"), NO_FILTER, [], 10, alone)
    assert max(alone, key=lambda f: alone[f].score) == glaze and alone[glaze].chunk == -1  # no passage
    raw = -index.query(
        f"SELECT bm25(names, {_statements.NAME_WEIGHTS}) FROM names WHERE names MATCH ? AND rowid = ?",
        (phrase("glazing"), glaze),
    )[0][0]
    assert alone[glaze].score == pytest.approx(NAME_SCORE_WEIGHT * raw)
    held = {glaze: Candidate(glaze, 7, 1.0)}
    fetch_names(index, phrase("glazing"), NO_FILTER, [], 10, held)
    assert held[glaze].score == pytest.approx(1.0 + NAME_SCORE_WEIGHT * raw) and held[glaze].chunk == 7


def test_the_budget_keeps_the_rarest_words_first(vault: Vault) -> None:
    index = vault.index
    clauses = [phrase("wheel"), phrase("kiln"), phrase("clay")]  # rarest first: 1, 3 and 6 notes
    count_clauses(index, clauses)
    assert within_budget(index, clauses, 4) == [phrase("wheel"), phrase("kiln")]
    assert within_budget(index, clauses, 100) == clauses
    assert within_budget(index, clauses, 0) == [phrase("wheel")]  # the rarest always ranks


def test_whole_notes_rank_by_their_selective_words_and_the_extra_phrases(vault: Vault) -> None:
    index = vault.index
    parsed = parse_query("kiln glaze")
    clauses = parsed.clauses()
    count_clauses(index, clauses)
    ranked = rank_whole_notes(index, parsed, clauses, parsed.strict(), NO_FILTER, [], [], clauses)
    assert set(ranked[:2]) == {_fid(vault, "kiln.md"), _fid(vault, "glaze.md")}
    absent = parse_query("zeppelin")
    count_clauses(index, absent.clauses())
    assert rank_whole_notes(index, absent, absent.clauses(), absent.strict(), NO_FILTER, [], [], []) == []
    extra = [phrase("throwing clay")]  # an expansion alone still ranks
    ranked = rank_whole_notes(index, absent, absent.clauses(), absent.strict(), NO_FILTER, [], extra, [])
    assert ranked[0] == _fid(vault, "wheel.md")


def test_a_date_names_the_notes_titled_by_it(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    index = vault.index
    day = _fid(vault, "2022-08-20 Firing log.md")
    assert dated_notes(index, [["2022-08-20"]]) == [day]
    both = dated_notes(index, [["2022-08-20", "2022-08-21"]])
    assert sorted(both) == sorted([day, _fid(vault, "2022-08-21 Firing log.md")])
    monkeypatch.setattr(_statements, "DATED_NOTES", 1)  # a month of daily notes names none of them
    assert dated_notes(index, [["2022-08-20", "2022-08-21"]]) == []
    assert dated_notes(index, [["2021-01-01"]]) == []
