"""Comparisons: the sides a clause sets against each other, and the aspect it compares them on."""

from __future__ import annotations

import pytest

from engine.strategies import Comparison, comparison


@pytest.mark.parametrize(
    ("clause", "sides", "aspect"),
    [
        (
            "Compare security and privacy in Obsidian Sync versus Obsidian Publish",
            ("Obsidian Sync", "Obsidian Publish"),
            "security and privacy",
        ),
        ("Compare Sync with Publish for security", ("Sync", "Publish"), "security"),
        (
            "What are the differences between Live Preview and Source mode?",
            ("Live Preview", "Source mode"),
            "What are the differences",
        ),
        ("Compare canvas and graph view: what is each for?", ("canvas", "graph view"), "what is each for"),
        ("Compare Sync, Publish and Web Clipper", ("Sync", "Publish", "Web Clipper"), ""),
        (
            "What's the difference between Free, Optional payment and Paid on a plugin listing?",
            ("Free", "Optional payment", "Paid"),
            "What's the difference on a plugin listing",
        ),
        ("Compare the pros and cons of Sync and Dropbox", ("Sync", "Dropbox"), "the pros and cons"),
        ("Compare and contrast TCP and UDP", ("TCP", "UDP"), ""),
        ("compare notes on espresso and filter coffee", ("espresso", "filter coffee"), "notes"),
        # sides named alike are as long as each other: the last one's extra words are the aspect
        (
            "Compare Obsidian Sync and Obsidian Publish security",
            ("Obsidian Sync", "Obsidian Publish"),
            "security",
        ),
    ],
)
def test_sides_and_aspect(clause: str, sides: tuple[str, ...], aspect: str) -> None:
    found = comparison(clause)
    assert found is not None
    assert (found.sides, found.aspect) == (sides, aspect)


@pytest.mark.parametrize(
    "clause",
    [
        "Compare the roasting and brewing choices that give better coffee at home, and list the sources.",
        "Compare how Sync and Publish handle privacy",  # a clause, not two things
        "Compare my notes",
        "How long should beans rest?",
        # "between" after a word that does not compare; sides that are numbers, or that ask
        "Is there a plugin that switches Obsidian between light and dark on its own?",
        "If the number multiplying a function is between 0 and 1, how does the graph change?",
        "A laptop AC adapter is compared to which desktop component",
    ],
)
def test_clauses_that_compare_no_two_things(clause: str) -> None:
    assert comparison(clause) is None


def test_a_head_word_said_once_belongs_to_every_side() -> None:
    found = comparison("Compare light and dark roasts, and explain how resting changes the cup.")
    assert found is not None and found.sides == ("light", "dark roasts") and found.head == "roasts"
    assert [found.named(s) for s in found.sides] == ["light roasts", "dark roasts"]
    assert Comparison(("A", "B")).named("A") == "A"
    between = comparison("What is the difference between symmetric and asymmetric encryption?")
    assert between is not None and between.head == "encryption"
    assert between.named("symmetric") == "symmetric encryption"
