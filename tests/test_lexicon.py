"""``engine.lexicon`` (WordNet's synonyms, shipped as package data), the search's use of them for
query words the vault never uses, and ``tools/make_synonyms.py`` that makes the data."""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import pytest
from _demo import write_vault

from engine import Vault
from engine.lexicon import _wordnet as _synonyms
from engine.lexicon import is_word, synonyms
from engine.vault import VaultSet

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


def test_a_word_is_one_wordnet_lists_in_any_of_its_forms() -> None:
    assert is_word("sluggish") and is_word("Pictures") and is_word("knowledge")
    assert not is_word("sspaeti") and not is_word("github") and not is_word("xqzzyword")
    assert not is_word("") and not is_word("a|b")


def test_no_stop_word_is_a_synonym() -> None:
    from engine.text import STOP_WORDS

    for word in ("practice", "seek", "go", "picture", "make"):
        assert not set(synonyms(word)) & STOP_WORDS, word


def test_a_missing_data_file_gives_no_synonyms_and_no_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_synonyms, "DATA", tmp_path / "absent.txt.gz")
    _synonyms._lines.cache_clear()
    _synonyms.synonyms.cache_clear()
    _synonyms.is_word.cache_clear()
    try:
        assert synonyms("sluggish") == ()
        assert is_word("sspaeti")  # without the data nothing is taken for a name
    finally:
        _synonyms._lines.cache_clear()
        _synonyms.synonyms.cache_clear()
        _synonyms.is_word.cache_clear()


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


def test_the_vault_says_which_synonyms_a_search_looked_for(vault: Vault, tmp_path: Path) -> None:
    assert vault.searched_synonyms("why is the app sluggish") == {"sluggish": ["slow"]}
    assert vault.searched_synonyms("slow app") == {}  # every word is in the vault
    assert vault.searched_synonyms("") == {}
    other = Vault(write_vault(tmp_path / "w", {"Dull.md": "A dull and inactive market.\n"}))
    other.refresh()
    both = VaultSet([vault, other])
    assert both.searched_synonyms("sluggish") == {"sluggish": ["slow", "dull", "inactive"]}
    both.close()


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


def test_the_tool_lists_each_words_synonyms_by_sense(tmp_path: Path) -> None:
    # WordNet's lines. data.*: offset lex_filenum ss_type w_cnt(hex) [word lex_id]... p_cnt [ptr]... | gloss;
    # index.*: lemma pos synset_cnt p_cnt [ptr_symbol]... sense_cnt tagsense_cnt [offset]... (by frequency)
    header = "  1 This software and database is being provided to you\n"
    files = {
        "data.adj": "00000001 00 a 01 inactive 0 002 & 00000002 a 0000 & 00000003 a 0000 | not active\n"
        "00000002 00 s 03 dull 0 slow 0 sluggish 0 001 & 00000001 a 0000 | not brisk\n"
        "00000003 00 s 02 idle 0 unused 0 001 & 00000001 a 0000 | not in use\n"
        "00000004 00 a 01 lonely(a) 0 000 | alone\n",
        "index.adj": "dull a 1 1 & 1 0 00000002\ninactive a 1 1 & 1 0 00000001\n"
        "lonely a 1 0 1 0 00000004\nsluggish a 1 1 & 1 0 00000002\n",
        "data.noun": "00000009 03 n 02 Motion_Picture 0 film 0 000 | a movie\n"
        "00000010 03 n 02 film 0 photographic_film 0 000 | what a camera holds\n",
        "index.noun": "film n 2 0 2 0 00000010 00000009\nmotion_picture n 1 0 1 0 00000009\n",
        "data.verb": "00000020 30 v 02 film 0 shoot 0 000 | record on film\n",
        "index.verb": "film v 1 0 1 0 00000020\n",
        "data.adv": "",
        "index.adv": "",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(header + text)
    tool = _load_tool()
    lines = tool.synonym_lines(tmp_path)  # type: ignore[attr-defined]
    assert lines == [
        "dull|slow|sluggish|inactive",  # a satellite takes its head's lemmas
        # most frequent sense first, a noun's before a verb's of the same rank ("film" is both)
        "film|photographic film|shoot|motion picture",
        # a head does not take all its satellites; a word with no synonym and a multi-word lemma are no line
        "sluggish|dull|slow|inactive",
    ]
    out = tmp_path / "out.txt.gz"
    tool.main([str(tmp_path), "--out", str(out)])  # type: ignore[attr-defined]
    first = out.read_bytes()
    assert gzip.decompress(first).decode().splitlines() == lines
    tool.main([str(tmp_path), "--out", str(out)])  # type: ignore[attr-defined]
    assert out.read_bytes() == first  # the same database gives the same bytes


def test_lookup_by_bisection_finds_every_line() -> None:
    lines = gzip.decompress(_synonyms.DATA.read_bytes()).decode().splitlines()
    for line in lines[:: max(1, len(lines) // 2000)] + lines[:3] + lines[-3:]:
        assert _synonyms._line_of(line.split("|", 1)[0]) == line
    for word in ("", "aaaaaa", "zzzzzz", "~", "kubernetes"):
        assert _synonyms._line_of(word) == ""
