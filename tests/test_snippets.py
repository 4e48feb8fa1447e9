"""Snippets (``engine/vault/_snippets.py``): the window of a passage densest in distinct query words."""

from __future__ import annotations

from engine.vault._snippets import SNIPPET_CHARS, densest_window, make_snippet

FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 6


def test_distinct_words_beat_one_word_repeated() -> None:
    repeated = "grind grind grind grind grind. "
    both = "A finer grind makes the espresso shot run slower."
    body = repeated + FILLER + both + FILLER
    score, start = densest_window(body, ["espresso", "grind"])
    assert start == body.index("grind makes")
    assert 2 <= score < 3  # two distinct words (and a hundredth per further match)


def test_words_match_by_stem_and_case() -> None:
    body = FILLER + "Roasting ROASTS the beans; the Roaster listens for the crack." + FILLER
    score, start = densest_window(body, ["roast", "cracks"])
    assert start == body.index("Roasting")
    assert int(score) == 2


def test_a_match_counts_only_inside_its_window() -> None:
    body = "espresso " + "x " * SNIPPET_CHARS + "grind"
    score, _ = densest_window(body, ["espresso", "grind"])
    assert int(score) == 1


def test_no_match_and_no_words() -> None:
    assert densest_window("Nothing here.", ["quokka"]) == (0.0, None)
    assert densest_window("Nothing here.", []) == (0.0, None)
    assert make_snippet("", ["quokka"]) == ("", None)


def test_snippet_shows_the_densest_window_and_marks_cuts() -> None:
    body = FILLER + "A finer grind makes the espresso shot run slower. " + FILLER
    snippet, start = make_snippet(body, ["espresso", "grind"])
    assert start == body.index("grind makes")
    assert "grind makes the espresso" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")
    assert len(snippet) <= SNIPPET_CHARS + 2


def test_same_body_gives_the_same_answer_for_other_words() -> None:
    """A body measured once is measured again, not answered from the first query's words."""
    body = "grind " + FILLER + "espresso espresso"
    assert densest_window(body, ["grind"])[1] == 0
    assert densest_window(body, ["espresso"])[1] == body.index("espresso")


def test_passage_window_joins_the_passages_its_citation_covers() -> None:
    """Under a heading: that section's other pieces and its subsections, not the next section; with no
    heading (the whole note): the passages after it."""
    from engine.vault._snippets import passage_window

    passages: dict[int, tuple[str | None, str, str]] = {
        0: (None, "Lead of the note.", ""),
        1: ("Wiring", "Four wires: clock, select,", "Wiring"),
        2: ("Wiring", "MOSI and MISO.", "Wiring"),
        3: ("Modes", "Clock polarity.", "Wiring > Modes"),
        4: ("History", "Motorola made it.", "History"),
    }
    assert passage_window(passages, 2, 0) == "Four wires: clock, select,\nMOSI and MISO.\nClock polarity."
    assert passage_window(passages, 0, 0) == "Lead of the note.\nFour wires: clock, select,\nMOSI and MISO."


def test_words_match_at_word_starts_only_in_any_case() -> None:
    """A query word matches where a word of the text starts with it, whatever the case (a Unicode case
    pair too: the Kelvin sign is a capital k), never inside another word."""
    words = ["kelvin", "ohm", "éclair"]
    assert densest_window("nokelvin, rhoohm and unéclair", words) == (0.0, None)
    body = "The \u212aELVIN scale. OHMS law. Éclairs."
    score, start = densest_window(body, words)
    assert (int(score), start) == (3, body.index("\u212a"))
    score, start = densest_window("x" * 300 + " kelvins", words)
    assert (int(score), start) == (1, 301)


def _every_code_point() -> str:
    import array

    return array.array("I", range(0x80, 0x110000)).tobytes().decode("utf-32-le", "surrogatepass")


def test_the_fold_table_is_what_re_ignorecase_matches_with_ascii() -> None:
    """Query words are found without a regex by folding the text with ``_FOLD``: every character that
    ``re.IGNORECASE`` matches with an ASCII word character must fold to it, and no other."""
    import re

    from engine.vault._snippets import _FOLD

    text = _every_code_point()
    for ascii_char in "abcdefghijklmnopqrstuvwxyz0123456789_":
        matched = {m.group() for m in re.finditer(re.escape(ascii_char), text, re.I)}
        folded = {chr(c) for c, to in _FOLD.items() if c >= 0x80 and to == ascii_char}
        assert matched == folded, ascii_char
        upper = ascii_char.upper()
        assert upper == ascii_char or _FOLD[ord(upper)] == ascii_char


def test_lower_changes_the_length_of_one_character_and_makes_ascii_of_one_other() -> None:
    """``_folded`` uses ``str.lower`` when it folds as ``_FOLD`` does, which rests on these two facts."""
    import re

    text = _every_code_point()
    assert len(text.lower()) == len(text) + 1  # U+0130 (I with a dot) lowers to two characters
    rest = text.replace("\u0130", "")
    lowered = rest.lower()
    assert len(lowered) == len(rest)
    assert {rest[m.start()] for m in re.finditer(r"[\x00-\x7f]", lowered)} == {"\u212a"}  # the Kelvin sign


def test_a_word_character_is_what_re_calls_one() -> None:
    """The scan tells where a word starts by ``_is_word`` of the character before: it must be ``\\w``."""
    import re

    from engine.vault._snippets import _is_word

    text = "".join(chr(c) for c in range(0x80)) + _every_code_point()
    assert {m.start() for m in re.finditer(r"\w", text)} == {i for i, ch in enumerate(text) if _is_word(ch)}


def test_words_found_without_a_regex_are_the_regexs_matches() -> None:
    """The scan for ASCII query words finds what the regex of the words finds (which stem, where), on
    text with the Unicode letters that match ASCII ones, and on plain text."""
    import itertools

    from engine.vault._snippets import _find, _match_pattern, _stems

    mixed = "\u0130stanbul \u0131i \u017ftrong KELVIN \u212aelvin Stra\u00dfe caf\u00e9 "
    mixed += "x_y 3d a_\u0130 \u0130\u0130 "
    words = ["istanbul", "strong", "kelvin", "s", "i", "k", "3d", "x_y", "caf", "stra", "ii", "a", "roast"]
    for body in (mixed, mixed.lower(), mixed.upper(), FILLER + "Roasting roasts; the roaster.", "x" + mixed):
        for n in (1, 2, 3):
            for chosen in itertools.combinations(words, n):
                stems = _stems(chosen)
                expected = [(m.start(), m.lastindex) for m in _match_pattern(stems).finditer(body)]
                assert _find(body, stems) == expected, (body, stems)


def test_clean_joins_runs_of_every_kind_of_whitespace_as_re_does() -> None:
    """``clean`` splits with ``str.split``: the same as ``re.sub(r"\\s+", " ", text).strip()`` for every
    character ``re`` calls whitespace (line and paragraph separators, no-break spaces) and no other."""
    import re

    from engine.vault._snippets import clean

    every = "\x00" + _every_code_point()[:0x3100] + "".join(chr(c) for c in range(0x80))
    spaces = "".join(m.group() for m in re.finditer(r"\s", every))
    assert len(spaces) == 29 and "\u2028" in spaces and "\xa0" in spaces
    text = f"{spaces}one{spaces}two\u200bthree {spaces[::-1]}four{spaces}"
    assert clean(text) == re.sub(r"\s+", " ", text).strip() == "one two\u200bthree four"
    assert clean(every) == re.sub(r"\s+", " ", every).strip()
