"""Voices: package voices overridden by the vault's, the report split into what may be rendered and what
is Shad's own, and the faithfulness check that keeps the original when a rendering changes a citation or
a number."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import UsageError
from engine.skills import find_voice, split_report, unfaithful, voice_prompt, voices

REPORT = """# How long should beans rest?

- Rest 3–7 days for filter, 7–14 days for espresso. [[Roasting/Resting beans#How long to rest]]
- At day 4 the shot ran fast; from day 8 it was 25–30 s. [[Journal/2026-03-28 Espresso dial-in]]

> [!note] Written by Shad's offline provider: no language model was used.

## Not found in the vault

- Obsidian Publish
"""


def test_package_voices_and_a_vault_override(tmp_path: Path) -> None:
    assert {"plain", "brief", "teacher"} <= set(voices())
    folder = tmp_path / "Shad" / "Skills" / "Voices"
    folder.mkdir(parents=True)
    (folder / "brief.md").write_text("---\nname: brief\ndescription: Our house style\n---\nOne line.\n")
    (folder / "broken.md").write_text("---\nname: Not Valid\n---\n")
    mine = find_voice("brief", [tmp_path])
    assert mine.description == "Our house style" and mine.source == tmp_path.name
    assert find_voice("plain", [tmp_path]).source == "package"
    with pytest.raises(UsageError, match="no voice named 'pirate'") as info:
        find_voice("pirate")
    assert info.value.hint is not None and "plain" in info.value.hint


def test_only_the_answer_is_rendered() -> None:
    answer, kept = split_report(REPORT)
    assert answer.startswith("# How long") and answer.rstrip().endswith("dial-in]]")
    assert kept.startswith("> [!note]") and "## Not found in the vault" in kept and "Obsidian Publish" in kept
    prompt = voice_prompt(find_voice("brief"), answer)
    assert (
        "Keep every wikilink" in prompt and answer in prompt and "Open with a one-sentence answer" in prompt
    )
    assert split_report("# Only an answer\n\nText.\n") == ("# Only an answer\n\nText.\n", "")


def test_the_check_catches_changed_numbers_and_citations() -> None:
    answer, _ = split_report(REPORT)
    faithful = (
        "# How long should beans rest?\n\nEspresso wants 7–14 days, filter 3–7 days. "
        "[[Roasting/Resting beans#How long to rest]] The journal saw fast shots at day 4 and 25–30 s from "
        "day 8. [[Journal/2026-03-28 Espresso dial-in]]\n"
    )
    assert unfaithful(answer, faithful) == []
    changed_number = faithful.replace("7–14", "10–14")
    assert any("numbers changed" in p and "7–14" in p for p in unfaithful(answer, changed_number))
    dropped_link = faithful.replace("[[Journal/2026-03-28 Espresso dial-in]]", "")
    problems = unfaithful(answer, dropped_link)
    assert any("citations changed" in p and "dropped [[Journal" in p for p in problems)
    added_link = faithful + " See also [[Beans/Storage]]."
    assert any("added [[Beans/Storage]]" in p for p in unfaithful(answer, added_link))
    assert "the rendering is empty" in unfaithful(answer, "  ")
