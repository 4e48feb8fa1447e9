"""``engine.vault._counts``: capped row counts of a search's words, cached on the index, and what they
decide (which words are selective enough to rank by, which AND queries are affordable)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _demo import write_vault

from engine import Vault
from engine.vault import _counts
from engine.vault._counts import affordable, count_all, phrase, row_cap, row_count, selective

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    notes: dict[str, str | bytes] = {f"n{i}.md": f"common words here, note {i}.\n" for i in range(6)}
    notes["rare.md"] = "common words and one zebra.\n"
    v = Vault(write_vault(tmp_path, notes))
    v.refresh()
    return v


def test_phrase_quotes_and_escapes() -> None:
    assert phrase("serial peripheral interface") == '"serial peripheral interface"'
    assert phrase('say "hi"') == '"say ""hi"""'


def test_the_cap_is_a_floor_or_a_share_of_the_rows(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    assert row_cap(vault.index, "docs") == _counts.SELECTIVE["docs"][0]  # a small vault: the floor
    monkeypatch.setattr(_counts, "SELECTIVE", {**_counts.SELECTIVE, "docs": (1, 0.5)})
    assert row_cap(vault.index, "docs") == 3  # half of the 7 notes


def test_counts_stop_at_the_cap_and_are_cached_in_one_statement(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements: list[str] = []
    query = vault.index.query

    def spy(sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        statements.append(sql)
        return query(sql, params)

    monkeypatch.setattr(vault.index, "query", spy)
    keys = [(phrase("common"), 4, "docs"), (phrase("zebra"), 4, "docs"), (phrase("absent"), 4, "fts")]
    count_all(vault.index, keys)
    assert len(statements) == 1
    assert [vault.index._counts[k] for k in keys] == [4, 1, 0]  # "common" is in 7 notes: stopped at 4
    count_all(vault.index, keys)
    assert len(statements) == 1  # all cached
    assert row_count(vault.index, phrase("zebra"), "docs") == 1


def test_selective_words_rarest_first_and_affordable_ands(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_counts, "SELECTIVE", {"fts": (2, 0.0), "names": (2, 0.0), "docs": (2, 0.0)})
    clauses = [phrase("common"), phrase("zebra"), phrase("words")]
    assert selective(vault.index, clauses, "docs") == [phrase("zebra")]  # the others are in 7 notes
    strict = " AND ".join(clauses)
    assert affordable(vault.index, strict, "docs", clauses)  # its rarest word is selective
    both = f"{phrase('common')} AND {phrase('words')}"
    assert not affordable(vault.index, both, "docs", [phrase("common"), phrase("words")])
    assert affordable(vault.index, both, "docs", times=4)  # 7 notes, under 4 x the cap of 2
