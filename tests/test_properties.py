"""A note's properties (frontmatter) as text: rendered for search and retrieval, leading the note's first
passage, handed over by search hits, accepted by the Code Mode quote check, and answered from offline."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from _demo import write_vault

import engine
from engine.retrieval import ContextItem, retrieval_score
from engine.text import stems_of
from engine.vault import Vault, properties_text
from engine.vault._parse import parse_for_index

pytestmark = pytest.mark.usefixtures("shad_home")

FILM = """---
categories:
  - "[[Movies]]"
cover: https://m.media-amazon.com/images/M/blade.jpg
genre:
  - "[[Sci-fi]]"
director:
  - "[[People/Ridley Scott|Ridley Scott]]"
cast:
  - "[[Harrison Ford]]"
year: 1982
watched: true
tags:
  - film
---
"""
BOOK = """---
cover: "[[out-of-control.jpg]]"
pages: 528
author: "[[Kevin Kelly]]"
description: A book about how machines, social systems and the economy are becoming biological.
---
Notes on the book.
"""


def test_properties_render_as_key_value_lines() -> None:
    note = engine.vault.parse_note("Films/Blade Runner.md", FILM.encode())
    text = properties_text(note.frontmatter, note.body)
    assert text.splitlines() == [
        "categories: Movies",
        "genre: Sci-fi",
        "director: Ridley Scott",
        "cast: Harrison Ford",
        "year: 1982",
    ]  # no URL, no flag, no tags, links shown as the note's name (or the alias)


def test_a_reader_sees_web_addresses_the_index_leaves_out() -> None:
    front = {"url": "https://stephango.com/", "cover": "file:///tmp/c.png", "twitter": "kepano"}
    assert properties_text(front) == "twitter: kepano"  # the index: a URL's words are noise
    assert properties_text(front, web=True).splitlines() == ["url: https://stephango.com/", "twitter: kepano"]


def test_attachments_prose_and_copies_of_the_body_are_left_out() -> None:
    assert properties_text({"cover": "[[out-of-control.jpg]]", "pages": 528}) == "pages: 528"
    prose = "A book about how machines, social systems and the economy are becoming biological."
    assert properties_text({"description": prose}) == ""
    lead = "Obsidian Sync is an add-on service that syncs your notes across devices."
    assert properties_text({"summary": lead}, f"{lead}\nMore.") == ""
    assert properties_text({"created": dt.date(2023, 9, 12), "nested": {"a": 1}}) == "created: 2023-09-12"


def test_the_index_leaves_out_a_property_the_body_says_as_retrieval_does() -> None:
    lead = "Obsidian Sync is an add-on service that syncs your notes."
    raw = f"---\nsummary: {lead}\nprice: 4\n---\n{lead}\n".encode()
    note, chunks = parse_for_index("Sync.md", raw)
    assert chunks[0].text.startswith("price: 4\n") and chunks[0].text.count(lead) == 1
    assert chunks[0].text.startswith(properties_text(note.frontmatter, note.body))


def test_properties_lead_the_first_passage_and_a_body_less_note_still_has_one() -> None:
    _note, chunks = parse_for_index("Films/Blade Runner.md", FILM.encode())
    assert len(chunks) == 1 and chunks[0].heading is None
    assert "director: Ridley Scott" in chunks[0].text
    _note, chunks = parse_for_index(
        "b.md", b"---\nyear: 1909\n---\n# Quotes\nA long enough quote to index.\n"
    )
    assert (chunks[0].heading, chunks[0].text.strip()) == (None, "year: 1909")
    assert chunks[1].heading == "Quotes"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(
        tmp_path / "library",
        {
            "References/Blade Runner.md": FILM,
            "References/Out of Control.md": BOOK,
            "Hardware/Serial Peripheral Interface.md": (
                "A 4-wire serial protocol developed by Motorola, often used to talk to sensors.\n"
                "# Topology\n- Master In Slave Out (MISO): not required in one-way communication (displays)\n"
                "# Concepts\n- Clock polarity and clock phase decide when bits are read.\n"
            ),
            "Recipes/Tart.md": "# Directions\nPreheat the oven to 220C and blind-bake the crust.\n",
        },
    )


def test_a_search_hit_hands_over_its_passage_with_the_properties(vault: Path) -> None:
    v = Vault(vault)
    hit = v.search("Blade Runner director", limit=3)[0]
    assert hit.path == "References/Blade Runner.md"
    assert "director: Ridley Scott" in hit.passage and "director" in hit.snippet


def test_a_hit_on_a_note_hands_over_the_short_sections_after_it(vault: Path) -> None:
    v = Vault(vault)
    hit = next(h for h in v.search("four-wire bus Motorola sensors", limit=3) if "Serial" in h.path)
    assert hit.heading is None  # the note's lead: its citation is the whole note
    assert "Master In Slave Out" in hit.passage  # the line under the next heading holds the answer


def test_a_hit_under_a_heading_hands_over_only_that_section(vault: Path) -> None:
    v = Vault(vault)
    hit = next(h for h in v.search("clock polarity phase bits", limit=3) if "Serial" in h.path)
    assert hit.heading == "Concepts"
    assert "Clock polarity" in hit.passage
    assert "Motorola" not in hit.passage and "MISO" not in hit.passage  # other sections: not cited


def test_a_doers_noun_holds_its_verb() -> None:
    assert "direct" in stems_of(["director"]) and "publish" in stems_of(["publisher"])
    assert stems_of(["tea"]) == {"tea"}


def test_a_passage_holds_its_notes_name() -> None:
    item = ContextItem("v", "References/Blade Runner.md", None, "director: Ridley Scott\nyear: 1982", "[[x]]")
    other = ContextItem("v", "Recipes/Tart.md", "Directions", "Preheat the oven to 220C.", "[[y]]")
    named, signals = retrieval_score("Who directed Blade Runner?", [item, other])
    unnamed, _ = retrieval_score(
        "Who directed Blade Runner?", [ContextItem("v", "Films/Film 7.md", None, item.text, "[[x]]"), other]
    )
    assert signals["best"] == 1.0 and named > unnamed


def test_an_offline_run_answers_from_a_notes_properties(vault: Path, tmp_path: Path) -> None:
    """End to end, through the Code Mode sandbox: the script's context leads with the properties, the
    engine's quote check accepts them, and the extractive answer cites the note."""
    run = engine.run(
        "Who directed Blade Runner?", str(vault), provider="offline", history_dir=str(tmp_path / "h")
    )
    assert run.status.value == "SUCCESS"
    cited = {c["path"] for c in run.summary["citations"] if c.get("resolved")}
    assert "References/Blade Runner.md" in cited
    report = Path(run.summary["report_path"]).read_text(encoding="utf-8")
    assert "Ridley Scott" in report
    run = engine.run(
        "How many pages does Out of Control have?",
        str(vault),
        provider="offline",
        history_dir=str(tmp_path / "h"),
    )
    assert "528" in Path(run.summary["report_path"]).read_text(encoding="utf-8")
