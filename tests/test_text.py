"""Words and stems (``engine.text``): what search, retrieval scores and answers compare."""

from __future__ import annotations

import random
import string
import sys
import threading

import snowballstemmer

from engine.text import (
    iso_dates,
    iso_days_of_months,
    points_back,
    points_back_by_pronoun,
    stem,
    stems_of,
    without_vault_wording,
)


def test_stems_are_porter2_and_a_doers_noun_holds_its_verb() -> None:
    assert stem("Running") == "run"
    assert stems_of(["director"]) == {"director", "direct"}


def test_threads_stemming_at_once_get_the_right_stems() -> None:
    # Leaves retrieve in threads; one shared snowball stemmer garbled words across them (IndexError).
    rng = random.Random(7)
    words = [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(6, 14))) + suffix
        for suffix in ("ational", "ization", "fulness", "iveness", "ing", "edly", "ements", "ously")
        for _ in range(1500)
    ]
    reference = snowballstemmer.stemmer("english")
    expected = {w: reference.stemWord(w) for w in words}
    got: dict[str, str] = {}
    errors: list[BaseException] = []

    def work(part: list[str]) -> None:
        try:
            for w in part:
                got[w] = stem(w)
        except BaseException as e:
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=work, args=(words[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
    assert got == expected


def test_dates_in_words_read_as_iso_dates() -> None:
    assert iso_dates("the August 20, 2022 roundup") == ["2022-08-20"]
    assert iso_dates("on the 3rd of Sept. 2021, and on 12 december 2019") == ["2021-09-03", "2019-12-12"]
    assert iso_dates("June 31 2020, Mayday 12 2020, May 2022, 2022-08-20") == []  # no date, or already ISO


def test_months_in_words_read_as_the_iso_dates_they_span() -> None:
    def span(text: str) -> list[tuple[str, str]]:
        return [(days[0], days[-1]) for days in iso_days_of_months(text)]

    assert span("the mid-January 2022 roundup") == [("2022-01-11", "2022-01-20")]
    assert span("notes of March 2025, early June of 2021") == [
        ("2025-03-01", "2025-03-31"),
        ("2021-06-01", "2021-06-10"),
    ]
    assert span("late Feb 2024") == [("2024-02-21", "2024-02-29")]  # a leap year's February
    assert span("August 20, 2022; 20 August 2022; 2022-08") == []  # full dates are iso_dates'; ISO as is


def test_a_clause_that_points_back_at_an_earlier_one() -> None:
    assert points_back("What theme did that developer make?")
    assert points_back("Where does its data go?")
    assert not points_back("That is the question: what theme did Ada make?")  # "that is": no noun
    assert not points_back("What theme did Ada make?")
    assert points_back("who developed it?") and points_back_by_pronoun("who developed it?")
    assert not points_back_by_pronoun("What website does that developer list?")  # another note
    assert not points_back_by_pronoun("What theme did Ada make?")
    for clause in ("when would I use each?", "is either of them free?", "how does each of them start?"):
        assert points_back_by_pronoun(clause), clause
    assert points_back_by_pronoun("is the latter free?")
    assert not points_back("when would I use each protocol in a game?")  # "each" of a noun: a new subject
    assert not points_back("Which is better for each note?")


def test_words_that_name_the_vault_as_where_to_look_are_taken_off() -> None:
    assert without_vault_wording("Summarize what the vault says about Docker") == "Summarize Docker"
    assert without_vault_wording("What do my notes say about Docker?") == "What Docker?"
    assert without_vault_wording("Find everything in my vault about TCP") == "Find everything about TCP"
    assert (
        without_vault_wording("How do I caption the snippets in my notes?")
        == "How do I caption the snippets?"
    )
    for kept in (
        "How do I create a vault?",  # the vault is the subject
        "Where are my notes stored in the vault folder?",  # "the vault folder" is a thing
        "Is there a plugin that places my notes on a calendar?",
        "in my notes",  # nothing else would be left
    ):
        assert without_vault_wording(kept) == kept
