"""What a question names by a proper name, and which context items are about it."""

from __future__ import annotations

import pytest

from engine.llm._offline_subject import Subject, proper_names, spelled, subject_items, unlisted_words


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("The GitHub user Artel250 has one plugin.", {"github", "artel250", "thegithub"}),
        ("Janis Ringli has published one plugin", {"janis", "ringli", "janisringli"}),
        ("Which theme did Jawuj design?", {"jawuj"}),  # "Which" alone is a stop word
        ("the 1957 album Bass on Top", {"bass", "top", "bassontop"}),  # stop words inside a name
        ("how do i sync my notes in 2024?", set()),  # lower case, and a number alone is no name
    ],
)
def test_proper_names_are_runs_of_capitalised_or_numbered_words(text: str, names: set[str]) -> None:
    assert proper_names(text) == names


def test_a_name_is_spelled_by_its_letters_and_digits() -> None:
    assert spelled("Shap Po") == spelled("shap-po") == "shappo"


PERSON = "# Janis Ringli\n- GitHub: janisringli\n### Plugins\n- [[verse-of-the-day|Verse of the Day]]"
ITEMS = [
    ("People/janisringli.md", PERSON),
    ("Plugins/bible-reference.md", "Plugin ID: `bible-reference`\nQuotes the daily Bible verse."),
    ("Plugins/verse-of-the-day.md", "Plugin ID: `verse-of-the-day`\nThe daily verse from YouVersion."),
    ("Plugins/party.md", "Plugin ID: `party`\nDeveloped by: [[janisringli]]"),
]


def test_the_named_note_and_the_notes_linked_with_it_are_the_subject() -> None:
    question = "Janis Ringli has published one Obsidian plugin. Which app does it take the daily verse from?"
    # the note it links to (verse-of-the-day) and the note that links to it (party): not bible-reference
    assert subject_items(question, ITEMS) == Subject(frozenset({0}), frozenset({2, 3}), ("janisringli",))


def test_a_word_no_dictionary_lists_names_a_note_as_a_capitalised_name_does() -> None:
    """ "the GitHub user sspaeti": a handle written in lower case. An English word ("knowledge") is no
    name, though a note is titled by it and the other items link to it."""
    question = "Which Obsidian theme is listed as made by the GitHub user sspaeti?"
    assert unlisted_words(question) == {"sspaeti"}
    person = "# sspaeti\n- GitHub: sspaeti\n## Author of\n### Themes\n- [[Kanagawa]]"
    items = [
        ("People/sspaeti.md", person),
        ("Themes/Kanagawa.md", "Repository: GitHub\nDesigned by: [[sspaeti]]"),
        ("Themes/Tokyo Night.md", "Designed by: [[tcmmichaelb139]]"),
    ]
    assert subject_items(question, items) == Subject(frozenset({0}), frozenset({1}), ("sspaeti",))
    topic = [("Knowledge.md", "- [[Sense Modality]]"), ("Sense Modality.md", "Knowledge from the senses.")]
    assert unlisted_words("What are the arguments against knowledge from the senses?") == set()
    assert subject_items("What are the arguments against knowledge from the senses?", topic) == Subject()


@pytest.mark.parametrize(
    "question",
    [
        "Which plugin takes the daily verse from an app?",  # names nobody
        "What does Mark McElroy write about the daily verse?",  # names a note the context does not hold
    ],
)
def test_no_subject_without_a_named_note_in_the_context(question: str) -> None:
    assert subject_items(question, ITEMS) == Subject()


def test_a_named_note_linked_with_no_other_item_says_nothing_of_which_answers() -> None:
    items = [ITEMS[0], ITEMS[1]]
    assert subject_items("Janis Ringli and the daily verse", items) == Subject()


def test_of_the_named_note_only_lines_that_say_more_than_its_name_rank_with_the_subject() -> None:
    from engine.llm._offline_text import SUBJECT_BONUS, rank_passages

    person = "# Razumihin\n- GitHub: Razumihin\n### Plugins\n- [[fullscreen-plugin|Fullscreen mode plugin]]"
    plugin = "Developed by: [[razumihin]]\n\nThis plugin allows viewing a single document in focus mode."
    items = [("People/razumihin.md", person), ("Plugins/fullscreen-plugin.md", plugin)]
    question = "What does Razumihin's fullscreen plugin let you do?"
    subject = subject_items(question, items)
    assert subject == Subject(frozenset({0}), frozenset({1}), ("razumihin",))
    pairs = [(path, text) for path, text in items]
    plain = {p.text: p.score for p in rank_passages(question, pairs)}
    scored = {p.text: p.score for p in rank_passages(question, pairs, subject=subject)}
    lift = {text: round(scored[text] - plain[text], 6) for text in plain}
    assert lift == {
        "GitHub: Razumihin": 0.0,  # says only the name
        "Fullscreen mode plugin": SUBJECT_BONUS,  # the named note's list of links
        "Developed by: razumihin": SUBJECT_BONUS,  # the linked note's lines
        "This plugin allows viewing a single document in focus mode.": SUBJECT_BONUS,
    }


def test_a_note_the_named_one_names_in_a_property_is_linked_with_it() -> None:
    # A property's link reaches the context as its target's name: "artist: Paul Chambers".
    album = ("References/Bass on Top.md", "categories: Albums\nartist: Paul Chambers\nyear: 1957")
    person = ("References/Paul Chambers.md", "categories: People\ntype: Musicians")
    question = "What kind of artist is the person who recorded the 1957 album Bass on Top?"
    subject = subject_items(question, [album, person])
    assert subject == Subject(frozenset({0}), frozenset({1}), ("Bass on Top",))


def test_a_linked_note_that_holds_no_word_of_the_question_is_about_the_named_one() -> None:
    from engine.llm._offline_text import rank_passages

    items = [
        ("References/Bass on Top.md", "categories: Albums\nartist: Paul Chambers\nyear: 1957"),
        ("References/Paul Chambers.md", "type: Musicians"),
    ]
    question = "What kind of artist is the person who recorded the 1957 album Bass on Top?"
    plain = [p.text for p in rank_passages(question, items)]
    assert "type: Musicians" not in plain  # no word of the question: not about it on its own
    ranked = [p.text for p in rank_passages(question, items, subject=subject_items(question, items))]
    assert "type: Musicians" in ranked
