"""``engine.vault._synonyms`` (WordNet's synonyms, shipped as package data), the search's use of them for
query words the vault never uses, and ``tools/make_synonyms.py`` that makes the data."""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import pytest
from _demo import write_vault

from engine import Vault
from engine.vault import _synonyms
from engine.vault._synonyms import synonyms

pytestmark = pytest.mark.usefixtures("shad_home")

TOOL = Path(__file__).resolve().parent.parent / "tools" / "make_synonyms.py"


def test_the_data_ships_with_its_licence() -> None:
    assert _synonyms.DATA.is_file()
    licence = _synonyms.DATA.with_name("WORDNET_LICENSE.txt").read_text()
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in licence


def test_synonyms_of_a_word_and_of_its_inflections() -> None:
    assert "slow" in synonyms("sluggish")
    assert "sluggish" not in synonyms("sluggish")
    assert "image" in synonyms("pictures")  # looked up by its base form
    assert "image" in synonyms("Picture")
    assert "look for" in synonyms("seek")  # multi-word synonyms keep their space
    assert synonyms("xqzzyword") == ()
    assert synonyms("") == () and synonyms("a|b") == ()


def test_no_stop_word_is_a_synonym() -> None:
    from engine.text import STOP_WORDS

    for word in ("practice", "seek", "go", "picture", "make"):
        assert not set(synonyms(word)) & STOP_WORDS, word


def test_a_missing_data_file_gives_no_synonyms(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_synonyms, "DATA", tmp_path / "absent.txt.gz")
    _synonyms._groups.cache_clear()
    _synonyms.synonyms.cache_clear()
    try:
        assert synonyms("sluggish") == ()
    finally:
        _synonyms._groups.cache_clear()
        _synonyms.synonyms.cache_clear()


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    filler = "Notes on the garden, the kitchen and the weekly plan. " * 3
    write_vault(
        tmp_path / "v",
        {
            "Slow app.md": "# Why the app is slow\n\nDisable plugins one by one to find the slow one.\n",
            "Plugins.md": "# Plugins\n\nHow to install plugins in the app.\n" + filler,
            "Picture.md": "# Picture\n\nA picture of the team.\n" + filler,
            "Image.md": "# Image\n\nThe image format of the export.\n" + filler,
            "Garden.md": "# Garden\n\n" + filler,
        },
    )
    v = Vault(tmp_path / "v")
    v.refresh()
    return v


def test_a_word_the_vault_never_uses_matches_its_synonyms(vault: Vault) -> None:
    hits = vault.search("sluggish")
    assert [h.path for h in hits] == ["Slow app.md"]
    assert "slow" in hits[0].snippet.lower()
    # in a question, next to words the vault does use
    assert vault.search("which plugin makes the editor sluggish")[0].path == "Slow app.md"


def test_a_word_the_vault_uses_keeps_its_own_sense(vault: Vault) -> None:
    # "picture" is in the vault: its synonym "image" is not searched for
    assert [h.path for h in vault.search("picture")] == ["Picture.md"]
    # a term absent from the vault with no synonym in it finds nothing on its own
    assert vault.search("torpidity xqzzyword") == []


def _load_tool() -> object:
    spec = importlib.util.spec_from_file_location("make_synonyms", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tool_groups_synsets_and_gives_satellites_their_head(tmp_path: Path) -> None:
    # WordNet's database lines: offset lex_filenum ss_type w_cnt(hex) [word lex_id]... p_cnt [ptr]... | gloss
    header = "  1 This software and database is being provided to you\n"
    (tmp_path / "data.adj").write_text(
        header
        + "00000001 00 a 01 inactive 0 002 & 00000002 a 0000 & 00000003 a 0000 | not active\n"
        + "00000002 00 s 03 dull 0 slow 0 sluggish 0 001 & 00000001 a 0000 | not brisk\n"
        + "00000003 00 s 02 idle 0 unused 0 001 & 00000001 a 0000 | not in use\n"
        + "00000004 00 a 01 lonely(a) 0 000 | alone\n"
    )
    for pos in ("noun", "verb", "adv"):
        (tmp_path / f"data.{pos}").write_text(
            header + "00000009 03 n 02 Motion_Picture 0 film 0 000 | a movie\n" if pos == "noun" else header
        )
    tool = _load_tool()
    groups = tool.groups(tmp_path)  # type: ignore[attr-defined]
    # a head is not merged with all its satellites; a satellite takes its head; one-word groups are left out
    assert groups == ["dull|slow|sluggish|inactive", "idle|unused|inactive", "motion picture|film"]
    out = tmp_path / "out.txt.gz"
    tool.main([str(tmp_path), "--out", str(out)])  # type: ignore[attr-defined]
    first = out.read_bytes()
    assert gzip.decompress(first).decode().splitlines() == groups
    tool.main([str(tmp_path), "--out", str(out)])  # type: ignore[attr-defined]
    assert out.read_bytes() == first  # the same database gives the same bytes
