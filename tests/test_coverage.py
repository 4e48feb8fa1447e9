"""Coverage: the goal's asks (comparisons by side) and which of them the supported claims answer."""

from __future__ import annotations

import pytest

from engine.retrieval.coverage import CoverEvidence, goal_asks, uncovered_asks

COMPARE = "Compare security and privacy in Obsidian Sync versus Obsidian Publish"


def test_a_comparison_makes_one_ask_per_side_with_its_aspect() -> None:
    sync, publish = goal_asks(COMPARE)
    assert (sync.text, sync.terms, sync.others, sync.side) == ("Obsidian Sync", ("sync",), ("publish",), True)
    assert publish.text == "Obsidian Publish" and publish.aspect == ("secur", "privaci")
    assert publish.query == "security and privacy in Obsidian Publish"


@pytest.mark.parametrize(
    ("goal", "sides"),
    [
        (
            "What are the differences between Obsidian Sync and Obsidian Publish?",
            ["Obsidian Sync", "Obsidian Publish"],
        ),
        ("Compare Sync with Publish for security", ["Sync", "Publish"]),
        ("Obsidian Sync vs Dropbox: which is safer?", ["Obsidian Sync", "Dropbox"]),
        ("French press compared to pour-over", ["French press", "pour-over"]),
    ],
)
def test_comparison_wordings(goal: str, sides: list[str]) -> None:
    assert [a.text for a in goal_asks(goal)] == sides


def test_plain_asks_are_the_goals_clauses() -> None:
    asks = goal_asks("How long should roasted beans rest? What grind size suits a French press?")
    assert [a.text for a in asks] == [
        "How long should roasted beans rest?",
        "What grind size suits a French press?",
    ]
    assert asks[0].terms == ("roast", "bean", "rest")  # question words ("how long should") are not asked for
    assert goal_asks("") == []


def test_a_side_needs_a_note_about_it_not_a_passage_naming_both() -> None:
    sync, publish = goal_asks(COMPARE)
    both = CoverEvidence(
        "Users of Obsidian Sync and Obsidian Publish who have 2FA enabled confirm their key.",
        "Teams/Security considerations for teams.md Account security",
        "Account security ...",
    )
    sync_note = CoverEvidence(
        "End-to-end encryption means Obsidian can never access your data.",
        "Obsidian Sync/Security and privacy.md Encryption",
        "End-to-end encryption ...",
    )
    assert [a.text for a in uncovered_asks([sync, publish], [both, sync_note])] == ["Obsidian Publish"]
    publish_note = CoverEvidence(
        "By default, Obsidian Publish does not collect visitor data.",
        "Obsidian Publish/Security and privacy.md Visitor data",
        "privacy regulations ...",
    )
    assert uncovered_asks([sync, publish], [sync_note, publish_note]) == []
    off_aspect = CoverEvidence("Set a custom domain.", "Obsidian Publish/Custom domains.md", "DNS records")
    assert [a.text for a in uncovered_asks([publish], [off_aspect])] == ["Obsidian Publish"]


def test_a_plain_ask_needs_most_of_its_words_near_the_claim() -> None:
    (ask,) = goal_asks("How do I embed a heading?")
    syntax = CoverEvidence(
        "To embed a note: `![[Internal links]]`",
        "Linking notes and files/Embed files.md Embed a note",
        "headings",
    )
    assert uncovered_asks([ask], [syntax]) == []  # "embed" in the claim, "heading" in the passage
    unrelated = CoverEvidence(
        "Headings use # symbols.", "Editing/Basic formatting syntax.md Headings", "levels"
    )
    assert uncovered_asks([ask], [unrelated]) == [ask]
    (capital,) = goal_asks("What is the capital of France?")
    assert uncovered_asks([capital], [syntax, unrelated]) == [capital]


def test_only_the_words_near_what_a_claim_quotes_count() -> None:
    # A drawing's text elements: the quoted line and, far from it, the ask's other words.
    (ask,) = goal_asks("How do I calculate the monthly payment on a 30-year mortgage?")
    drawing = (
        "GDP. " + "Domestic goods traded. " * 30 + "4. Transfer Payments. Welfare. " + "Foreign goods. " * 30
    )
    drawing += "Calculate it every month and every year."
    quoted = CoverEvidence("Transfer Payments", "Excalidraw/Drawing.md Text Elements", drawing)
    assert uncovered_asks([ask], [quoted]) == [ask]
    # the same words near the quote count, and a claim in other words than the passage keeps all of it
    close = CoverEvidence(
        "Transfer Payments", "Drawing.md", "Calculate the month and year: transfer payments."
    )
    assert uncovered_asks([ask], [close]) == []
    said = CoverEvidence(
        "Payments are transfers, by this drawing", "Excalidraw/Drawing.md Text Elements", drawing
    )
    assert uncovered_asks([ask], [said]) == []


def test_the_subtask_a_conflict_bullet_names_is_not_what_its_source_says() -> None:
    (ask,) = goal_asks("How many moons orbit Neptune?")
    side = CoverEvidence(
        "30 — from “How many moons orbit Neptune?” (`root`): “The Standard plan keeps history for 30 days.”",
        "Plans/Sync plan.md Sync plan",
        "The Standard plan keeps version history for 30 days.",
    )
    assert uncovered_asks([ask], [side]) == [ask]
    said = CoverEvidence("Neptune has sixteen known moons.", "Space/Neptune.md Moons", "sixteen moons")
    assert uncovered_asks([ask], [said]) == []


def test_an_ask_that_points_back_with_a_pronoun_needs_what_it_points_at() -> None:
    """ "..., and how much does *it* cost?": a line on what something else costs does not answer it."""
    goal = "How do I publish my notes as a website, and how much does it cost?"
    publish, cost = goal_asks(goal)
    assert cost.terms == ("cost",) and set(cost.about) == {"publish", "note", "websit"}
    assert publish.about == ()
    elsewhere = CoverEvidence(
        "Prompt variables may have cost and privacy considerations depending on the provider.",
        "Obsidian Web Clipper/Variables.md When to use prompt variables",  # "web" is not "website"
        "Prompt variables may have cost and privacy considerations depending on the provider.",
    )
    assert uncovered_asks([cost], [elsewhere]) == [cost]
    priced = CoverEvidence(
        "Obsidian Publish costs 8 USD a month per site.",
        "Obsidian Publish/Introduction to Obsidian Publish.md Pricing",
        "Obsidian Publish costs 8 USD a month per site, billed yearly.",
    )
    assert uncovered_asks([cost], [priced]) == []
    assert goal_asks("How much does Obsidian Publish cost?")[0].about == ()  # no pointer, nothing to add


def test_the_words_that_name_the_vault_are_not_an_asks_words() -> None:
    (ask,) = goal_asks("Summarize what the vault says about Docker")
    assert ask.terms == ("docker",)  # "vault" is where to look: no passage about Docker needs to say it


def test_compare_a_and_b_makes_one_ask_per_side_the_shared_word_in_neither() -> None:
    light, dark = goal_asks("Compare light and dark roasts")
    assert (light.text, light.terms, light.others) == ("light", ("light",), ("dark",))
    assert dark.terms == ("dark",)  # "roasts" is what both sides are: a claim on light roasts says it
    light_claim = CoverEvidence(
        "Light roasts keep more of the origin's acidity.", "Roasting/Roast levels.md", ""
    )
    assert uncovered_asks([light, dark], [light_claim]) == [dark]
    dark_claim = CoverEvidence("Dark roasts taste of the roast.", "Roasting/Roast levels.md", "")
    assert uncovered_asks([light, dark], [light_claim, dark_claim]) == []
