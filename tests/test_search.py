"""``Vault.search``: ranking, question-style queries, query syntax, robustness, filters, hit shape."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from pathlib import Path

import pytest
from _demo import DEMO, write_vault

from engine import Vault
from engine.errors import PathOutsideVaultError, UsageError
from engine.text import stem

FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt. " * 3


pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "vault"
    shutil.copytree(DEMO, dest, symlinks=True)
    return dest


def paths(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.path for h in hits]


def top(v: Vault, query: str, n: int = 3, **kw: object) -> list[str]:
    return paths(v.search(query, limit=10, **kw))[:n]  # type: ignore[arg-type]


# --- ranking ---


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Maillard reaction", "Roasting/Maillard reaction.md"),
        ("second crack", "Roasting/Second crack.md"),
        ("moka pot", "Brewing/Moka pot.md"),
        ("cold brew", "Brewing/Cold brew.md"),
        ("burr grinder", "Equipment/Burr grinder.md"),
        ("gooseneck kettle", "Equipment/Gooseneck kettle.md"),
        ("glossary", "Reference/Glossary.md"),
        ("Scott Rao", "People/Scott Rao.md"),
        ("aeropress", "Brewing/AeroPress.md"),
        ("water chemistry", "Water/Water chemistry.md"),
    ],
)
def test_title_match_ranks_first(demo: Vault, query: str, expected: str) -> None:
    assert top(demo, query, 1) == [expected]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("1C", "Roasting/First crack.md"),  # alias
        ("cafetiere", "Brewing/French press.md"),  # alias, accent-folded
        ("Cafetière", "Brewing/French press.md"),
        ("degassing", "Roasting/Resting beans.md"),  # alias
        ("DTR", "Roasting/Development time.md"),
    ],
)
def test_alias_and_abbreviation_match(demo: Vault, query: str, expected: str) -> None:
    assert expected in top(demo, query, 2)


def test_single_word_title_ranks_in_top_3(demo: Vault) -> None:
    assert "Brewing/Espresso.md" in top(demo, "espresso", 3)


@pytest.mark.parametrize(
    ("question", "expected", "heading"),
    [
        ("how long should I rest beans after roasting?", "Roasting/Resting beans.md", "How long to rest"),
        ("What water temperature should I use for pour-over?", "Brewing/Pour-over.md", "Water temperature"),
        ("what is first crack?", "Roasting/First crack.md", None),
        ("How do I make my own brew water?", "Water/Making brew water.md", None),
        ("what grind size for a french press?", "Brewing/French press.md", None),
        ("what are the SCA water targets?", "Water/Water chemistry.md", "SCA targets"),
    ],
)
def test_natural_language_questions(demo: Vault, question: str, expected: str, heading: str | None) -> None:
    hits = demo.search(question, limit=5)
    assert hits, question
    assert hits[0].path == expected, paths(hits)
    if heading:
        assert hits[0].heading == heading


def test_question_snippet_contains_the_answer(demo: Vault) -> None:
    hit = demo.search("how long should I rest beans after roasting?", limit=1)[0]
    assert "7–14 days" in hit.snippet or "3–7 days" in hit.snippet


def test_scores_are_descending(demo: Vault) -> None:
    for q in ("first crack", "how do I dial in espresso", "water", "roast"):
        scores = [h.score for h in demo.search(q, limit=20)]
        assert scores == sorted(scores, reverse=True), q
        assert all(s > 0 for s in scores)


def test_smaller_limit_is_a_prefix_of_larger_limit(demo: Vault) -> None:
    for q in ("Press pot", "espresso", "first crack", "how long should I rest beans"):
        assert paths(demo.search(q, limit=3)) == paths(demo.search(q, limit=10))[:3], q


# --- query syntax ---


def test_stemming(tmp_path: Path) -> None:
    v = Vault(write_vault(tmp_path / "v", {"a.md": "I enjoy roasting coffee.", "b.md": "Nothing here."}))
    assert paths(v.search("roasted")) == ["a.md"]
    assert paths(v.search("roasts")) == ["a.md"]
    assert paths(v.search("roast")) == ["a.md"]


def test_stemming_on_demo(demo: Vault) -> None:
    assert "Roasting/Resting beans.md" in top(demo, "rested beans", 3)


def test_quoted_phrase(demo: Vault) -> None:
    hits = demo.search('"rolling crack"')
    assert hits and hits[0].path == "Roasting/First crack.md"
    # word order matters inside quotes
    assert demo.search('"crack rolling"') == []


def test_quoted_phrase_needs_adjacency(tmp_path: Path) -> None:
    v = Vault(
        write_vault(
            tmp_path / "v", {"a.md": "the bean was light roasted", "b.md": "light coffee, roasted bean"}
        )
    )
    assert paths(v.search('"light roasted"')) == ["a.md"]
    assert sorted(paths(v.search("light roasted"))) == ["a.md", "b.md"]


def test_prefix_query(demo: Vault) -> None:
    assert top(demo, "degass*", 1) == ["Roasting/Resting beans.md"]
    v_hits = demo.search("Yirgach*")
    assert v_hits and v_hits[0].path == "Beans/Ethiopia Yirgacheffe.md"


def test_excluded_word(tmp_path: Path) -> None:
    v = Vault(
        write_vault(
            tmp_path / "v",
            {"a.md": "crema on an espresso", "b.md": "crema on a moka pot", "c.md": "espresso only"},
        )
    )
    assert paths(v.search("crema -espresso")) == ["b.md"]
    assert paths(v.search('crema -"moka pot"')) == ["a.md"]


def test_excluded_word_applies_to_whole_note(tmp_path: Path) -> None:
    v = Vault(
        write_vault(
            tmp_path / "v",
            {
                "a.md": f"# A\n\n## One\n\nThe crema was thick. {FILLER}\n\n"
                f"## Two\n\nAn espresso. {FILLER}\n",
                "b.md": f"# B\n\nThe crema on a moka. {FILLER}\n",
            },
        )
    )
    assert paths(v.search("crema -espresso")) == ["b.md"]


def test_only_excluded_words(tmp_path: Path) -> None:
    v = Vault(write_vault(tmp_path / "v", {"a.md": "espresso", "b.md": "moka"}))
    assert "a.md" not in paths(v.search("-espresso"))


@pytest.mark.parametrize("query", ["the", "to be or not to be", "how is it", "what"])
def test_stop_word_only_queries(demo: Vault, query: str) -> None:
    hits = demo.search(query, limit=5)
    assert isinstance(hits, list)
    assert len(hits) <= 5


def test_stop_words_do_not_swamp_a_question(demo: Vault) -> None:
    # The same content words with and without question padding find the same best note.
    assert top(demo, "rest beans roasting", 1) == top(
        demo, "how long should I rest the beans after roasting", 1
    )


def test_stop_word_only_query_is_taken_literally(tmp_path: Path) -> None:
    v = Vault(write_vault(tmp_path / "v", {"hamlet.md": "To be, or not to be", "other.md": "coffee beans"}))
    assert paths(v.search("to be or not to be"))[:1] == ["hamlet.md"]


@pytest.mark.parametrize(
    "query",
    [
        "AND",
        "OR",
        "NOT",
        "AND OR NOT",
        "NEAR(",
        "NEAR(crack roast, 3)",
        '"unbalanced',
        'first "crack',
        "col:val",
        "title:espresso",
        "body:crema",
        "a:b:c",
        "*",
        "**",
        "*crack",
        "crack**",
        "-*",
        "(",
        ")",
        "((crack)",
        "^",
        "^crack",
        "+",
        "-",
        "--espresso",
        "espresso -",
        "{a b}",
        "[[Home]]",
        "#brewing",
        "'",
        "' OR 1=1 --",
        "\\",
        "%",
        "_",
        '""',
        '"" ""',
        "\x00",
        "crack\x00roast",
        "\t\n",
        "🙂 coffee",
        "c++",
        "node.js",
        "don’t roast",
        "x" * 5000,
        " ".join(["espresso"] * 300),
        " ".join(f"w{i}" for i in range(300)),
    ],
)
def test_fts_syntax_in_user_text_never_errors(demo: Vault, query: str) -> None:
    hits = demo.search(query, limit=5)
    assert isinstance(hits, list)
    for h in hits:
        assert h.path.endswith(".md")


def test_fallback_when_strict_and_finds_nothing(demo: Vault) -> None:
    # no note has both words: the query relaxes instead of returning nothing
    assert top(demo, "degassing zzzqqqx", 1) == ["Roasting/Resting beans.md"]
    assert top(demo, "zzzqqqx degassing", 1) == ["Roasting/Resting beans.md"]


def test_strict_match_beats_partial_match(tmp_path: Path) -> None:
    v = Vault(
        write_vault(
            tmp_path / "v",
            {
                "both.md": "A note about crema and the tamper.",
                "one.md": "crema crema crema crema everywhere",
                "two.md": "tamper tamper tamper tamper everywhere",
            },
        )
    )
    hits = v.search("crema tamper")
    assert hits[0].path == "both.md"
    assert set(paths(hits)) == {"both.md", "one.md", "two.md"}


def test_nothing_matches(demo: Vault) -> None:
    assert demo.search("zzzqqqx") == []
    assert demo.search("zzzqqqx yyyqqqx") == []


# --- hits ---


def test_hit_fields(demo: Vault) -> None:
    hits = demo.search("first crack", limit=5)
    assert hits
    for h in hits:
        assert h.vault == demo.id
        assert h.path.endswith(".md") and not h.path.startswith("/")
        assert isinstance(h.title, str) and h.title
        assert isinstance(h.score, float)
        assert isinstance(h.snippet, str) and h.snippet
        assert h.heading is None or isinstance(h.heading, str)
        d = h.to_dict()
        assert {"vault", "path", "title", "score", "snippet", "heading"} <= set(d)
    first = hits[0]
    assert first.path == "Roasting/First crack.md"
    assert first.title == "First crack"
    assert first.type == "concept"
    assert "roasting/milestones" in first.tags


def test_hit_heading_is_the_heading_over_the_snippet(tmp_path: Path) -> None:
    v = Vault(
        write_vault(
            tmp_path / "v",
            {
                "a.md": f"# Title\n\nIntro {FILLER}\n\n## Storage\n\nKeep beans in a zircon jar. {FILLER}\n\n"
                f"## Brewing\n\nUse a kettle. {FILLER}\n"
            },
        )
    )
    hit = v.search("zircon")[0]
    assert hit.heading == "Storage"
    assert "zircon" in hit.snippet
    hit = v.search("kettle")[0]
    assert hit.heading == "Brewing"


def test_hit_heading_for_nested_and_repeated_headings(demo: Vault) -> None:
    # "Espresso" is a level-3 heading under "How long to rest"
    hit = demo.search("gas in the puck gushing", path="Roasting/Resting beans.md")[0]
    assert hit.heading == "Espresso"
    assert "puck" in hit.snippet
    hit = demo.search("bloom swell", path="Roasting/Resting beans.md")[0]
    assert hit.heading == "Filter"
    # the same heading twice in one note: each passage keeps its own
    log = "Journal/2026-03-14 Roast log.md"
    for words in ("jasmine bergamot", "hazelnut brown sugar"):
        hit = demo.search(words, path=log)[0]
        assert hit.heading == "Tasting notes"
        assert words.split()[0] in hit.snippet.lower()


@pytest.mark.parametrize(
    "query", ["first crack", "degassing", "water temperature pour-over", "roasted", "chloramine"]
)
def test_snippets_contain_query_words(demo: Vault, query: str) -> None:
    hits = demo.search(query, limit=5)
    assert hits
    words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 2]
    for h in hits[:3]:
        text = h.snippet.lower()
        assert any(stem(w)[:5] in text for w in words), (h.path, h.snippet)


def test_snippet_is_short_and_clean(demo: Vault) -> None:
    for h in demo.search("roast levels", limit=10):
        assert len(h.snippet) <= 400
        assert "\n" not in h.snippet
        assert not h.snippet.startswith("---")  # frontmatter is not part of the snippet


def test_snippet_centres_on_a_late_match(tmp_path: Path) -> None:
    body = "# Long\n\n" + ("Unrelated words about something else entirely. " * 60) + "The xylophone note."
    v = Vault(write_vault(tmp_path / "v", {"long.md": body}))
    assert "xylophone" in v.search("xylophone")[0].snippet


def test_limit_respected(demo: Vault) -> None:
    assert len(demo.search("coffee", limit=3)) == 3
    assert len(demo.search("coffee", limit=1)) == 1
    assert len(demo.search("coffee", limit=200)) <= len(demo.list_notes())
    assert len(demo.search("", limit=7)) == 7


@pytest.mark.parametrize("limit", [0, -1])
def test_bad_limit_is_usage_error(demo: Vault, limit: int) -> None:
    with pytest.raises(UsageError):
        demo.search("coffee", limit=limit)


def test_no_duplicate_paths(demo: Vault) -> None:
    for q in ("espresso", "how do I roast coffee at home", "water", "crack"):
        ps = paths(demo.search(q, limit=30))
        assert len(ps) == len(set(ps)), q


# --- filters ---


def test_path_filter(demo: Vault) -> None:
    hits = demo.search("troubleshooting", path="Roasting", limit=20)
    assert hits and all(h.path.startswith("Roasting/") for h in hits)
    assert "Roasting/Troubleshooting.md" in paths(hits)
    assert paths(demo.search("troubleshooting", path="Roasting/", limit=20)) == paths(hits)
    brewing = demo.search("troubleshooting", path="Brewing", limit=20)
    assert brewing[0].path == "Brewing/Troubleshooting.md"
    assert "Roasting/Troubleshooting.md" not in paths(brewing)


def test_path_filter_is_a_folder_not_a_string_prefix(tmp_path: Path) -> None:
    v = Vault(write_vault(tmp_path / "v", {"Roast/a.md": "bean", "Roasting/b.md": "bean"}))
    assert paths(v.search("bean", path="Roast")) == ["Roast/a.md"]


def test_path_filter_exact_note(demo: Vault) -> None:
    assert paths(demo.search("crack", path="Roasting/First crack.md")) == ["Roasting/First crack.md"]


def test_path_filter_with_like_wildcards(tmp_path: Path) -> None:
    v = Vault(write_vault(tmp_path / "v", {"100%_done/a.md": "bean", "100xxdone/b.md": "bean"}))
    assert paths(v.search("bean", path="100%_done")) == ["100%_done/a.md"]


@pytest.mark.parametrize("bad", ["../", "/etc", ".obsidian"])
def test_path_filter_outside_vault_refused(demo: Vault, bad: str) -> None:
    with pytest.raises(PathOutsideVaultError):
        demo.search("x", path=bad)


def test_type_filter(demo: Vault) -> None:
    hits = demo.search("roasting", type="person", limit=20)
    assert hits and all(h.path.startswith("People/") for h in hits)
    assert all(h.type == "person" for h in hits)
    assert paths(demo.search("roasting", type="PERSON", limit=20)) == paths(hits)
    assert demo.search("roasting", type="no-such-type") == []


def test_tag_filter_hierarchical(demo: Vault) -> None:
    espresso = demo.search("", tags="brewing/espresso", limit=50)
    assert "Brewing/Espresso.md" in paths(espresso)
    assert all(any(t == "brewing/espresso" for t in h.tags) for h in espresso)
    brewing = set(paths(demo.search("", tags="brewing", limit=100)))
    assert set(paths(espresso)) <= brewing
    assert len(brewing) > len(espresso)


def test_tag_filter_parent_matches_child_only_tag(tmp_path: Path) -> None:
    v = Vault(
        write_vault(
            tmp_path / "v",
            {
                "x.md": "---\ntags: [Brewing/Espresso]\n---\ncrema",
                "y.md": "crema #brewing",
                "z.md": "crema #brewingtools",
            },
        )
    )
    assert paths(v.search("crema", tags="brewing")) == ["x.md", "y.md"] or set(
        paths(v.search("crema", tags="brewing"))
    ) == {"x.md", "y.md"}
    assert paths(v.search("crema", tags="brewing/espresso")) == ["x.md"]
    assert paths(v.search("crema", tags="#Brewing/Espresso")) == ["x.md"]
    assert v.search("crema", tags="brewing/esp") == []
    assert v.search("crema", tags="espresso") == []  # a child name alone is not the tag
    assert paths(v.search("crema", tags="brewingtools")) == ["z.md"]


def test_tag_filter_all_must_match(demo: Vault) -> None:
    assert paths(demo.search("", tags=["brewing", "cold"], limit=50)) == ["Brewing/Cold brew.md"]


def test_where_filter(demo: Vault) -> None:
    washed = demo.search("", where={"process": "washed"}, limit=50)
    assert washed and all(h.path.startswith("Beans/") for h in washed)
    for h in washed:
        assert demo.read_note(h.path).frontmatter["process"] == "washed"
    natural = demo.search("", where={"process": "natural"}, limit=50)
    assert set(paths(natural)).isdisjoint(paths(washed))


def test_where_filter_numbers_and_value_lists(demo: Vault) -> None:
    fives = set(paths(demo.search("", where={"rating": 5}, limit=50)))
    fours = set(paths(demo.search("", where={"rating": 4}, limit=50)))
    both = set(paths(demo.search("", where={"rating": [4, 5]}, limit=50)))
    assert fives and fours
    assert both == fives | fours
    for p in fives:
        assert demo.read_note(p).frontmatter["rating"] == 5


def test_where_filter_matches_inside_list_fields(demo: Vault) -> None:
    assert paths(demo.search("", where={"aliases": "1C"})) == ["Roasting/First crack.md"]
    tagged = set(paths(demo.search("", where={"tags": "roasting"}, limit=100)))
    assert "Roasting/First crack.md" in tagged


def test_where_filter_combined_with_query(demo: Vault) -> None:
    hits = demo.search("coffee", where={"type": "origin"}, limit=20)
    assert hits and all(h.type == "origin" for h in hits)


def test_where_filter_unknown_field_and_odd_keys(demo: Vault) -> None:
    assert demo.search("coffee", where={"no_such_field": "x"}) == []
    assert demo.search("coffee", where={'we"ird': "x"}) == []


def test_where_filter_date_value(demo: Vault) -> None:
    by_string = set(paths(demo.search("", where={"created": "2026-01-19"}, limit=50)))
    assert "Roasting/First crack.md" in by_string
    by_date = set(paths(demo.search("", where={"created": dt.date(2026, 1, 19)}, limit=50)))
    assert by_date == by_string


NAN_VAULT: dict[str, str | bytes] = {
    "nan.md": "---\nkind: cup\nscore: .nan\nrange: [-.inf, .inf]\n---\ncrema from the odd note\n",
    "good.md": "---\nkind: cup\nscore: 3\n---\ncrema from the good note\n",
}


def test_where_filter_over_a_vault_with_nan_frontmatter(tmp_path: Path) -> None:
    """NaN/infinity in one note's frontmatter used to be indexed as JSON SQLite rejects ("malformed
    JSON"): every ``where`` search of the vault failed. They are kept as the text written."""
    v = Vault(write_vault(tmp_path / "v", NAN_VAULT))
    assert sorted(paths(v.search("crema", where={"kind": "cup"}))) == ["good.md", "nan.md"]
    assert paths(v.search("crema", where={"score": 3})) == ["good.md"]
    assert paths(v.search("", where={"score": ".nan"})) == ["nan.md"]
    assert paths(v.search("", where={"range": ".inf"})) == ["nan.md"]


def test_code_mode_search_over_a_vault_with_nan_frontmatter(tmp_path: Path) -> None:
    from engine.codemode import Sandbox, SandboxUnavailable

    v = Vault(write_vault(tmp_path / "v", NAN_VAULT))
    script = (
        'plain = [h["path"] for h in obsidian.search("crema")]\n'
        'kept = [h["path"] for h in obsidian.search("crema", where={"kind": "cup"})]\n'
        "__result__ = [sorted(plain), sorted(kept)]\n"
    )
    try:
        with Sandbox([v]) as sb:
            result = sb.run(script).result
    except SandboxUnavailable as exc:
        pytest.skip(f"no Code Mode sandbox here: {exc}")
    assert result == [["good.md", "nan.md"], ["good.md", "nan.md"]]


def test_modified_filters(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", {"old.md": "bean old", "mid.md": "bean mid", "new.md": "bean new"})
    stamps = {
        "old.md": "2020-01-01T12:00:00",
        "mid.md": "2023-06-15T12:00:00",
        "new.md": "2026-03-01T12:00:00",
    }
    for name, iso in stamps.items():
        t = dt.datetime.fromisoformat(iso).timestamp()
        os.utime(root / name, (t, t))
    v = Vault(root)
    assert set(paths(v.search("bean", modified_after="2023-01-01"))) == {"mid.md", "new.md"}
    assert set(paths(v.search("bean", modified_before="2023-01-01"))) == {"old.md"}
    assert paths(v.search("bean", modified_after="2021-01-01", modified_before="2024-01-01")) == ["mid.md"]
    # datetimes, dates and epoch seconds work too
    assert paths(v.search("bean", modified_after=dt.datetime(2025, 1, 1))) == ["new.md"]
    assert paths(v.search("bean", modified_after=dt.date(2025, 1, 1))) == ["new.md"]
    assert paths(v.search("bean", modified_before=dt.datetime(2021, 1, 1).timestamp())) == ["old.md"]
    # and with an empty query they list the notes, newest first
    assert paths(v.search("", modified_after="2021-01-01")) == ["new.md", "mid.md"]


def test_bad_date_is_usage_error(demo: Vault) -> None:
    with pytest.raises(UsageError):
        demo.search("coffee", modified_after="last tuesday")


def test_filters_combine(demo: Vault) -> None:
    hits = demo.search("", path="Brewing", type="method", tags="brewing/immersion", limit=50)
    assert set(paths(hits)) == {"Brewing/AeroPress.md", "Brewing/Cold brew.md", "Brewing/French press.md"}


def test_empty_query_with_filters_lists_notes(demo: Vault) -> None:
    people = demo.search("", type="person", limit=50)
    assert sorted(paths(people)) == sorted(demo.list_notes("People"))
    for h in people:
        assert h.vault == demo.id and h.title
    # empty query and no filters: the vault's notes, up to the limit (sync-conflict copies left out)
    copies = [c["path"] for c in demo.conflict_copies()]
    assert copies and len(demo.search("", limit=500)) == len(demo.list_notes()) - len(copies)
    assert len(demo.search("", limit=500, include_conflicts=True)) == len(demo.list_notes())
    assert len(demo.search("   ", limit=5)) == 5


def test_exclude_history_folder(demo_copy: Path) -> None:
    hist = demo_copy / "Shad" / "History"
    hist.mkdir(parents=True)
    (hist / "2026-04-01 run.md").write_text(
        "# Run\n\nAnswer: rest beans 3–7 days for filter. degassing degassing degassing\n", encoding="utf-8"
    )
    (demo_copy / "Shad" / "Historyish.md").write_text("degassing sibling", encoding="utf-8")
    plain = Vault(demo_copy)  # Shad's run history is not indexed unless asked for
    assert not any(p.startswith("Shad/History/") for p in paths(plain.search("degassing", limit=20)))
    plain.close()
    v = Vault(demo_copy, include_history=True)
    assert "Shad/History/2026-04-01 run.md" in paths(v.search("degassing", limit=20))
    hits = v.search("degassing", limit=20, exclude=["Shad/History"])
    assert hits and not any(p.startswith("Shad/History/") for p in paths(hits))
    assert "Shad/Historyish.md" in paths(hits)  # a sibling with a similar name is kept
    assert paths(v.search("degassing", limit=20, exclude=["Shad/History/"])) == paths(hits)
    assert not any(
        p.startswith("Shad/History/") for p in paths(v.search("", limit=500, exclude=["Shad/History"]))
    )


def test_search_after_refresh_sees_changes(demo_copy: Path) -> None:
    v = Vault(demo_copy)
    assert v.search("quokka") == []
    (demo_copy / "Quokka.md").write_text("# Quokka\n\nA quokka visits the roastery.", encoding="utf-8")
    v.refresh()
    assert top(v, "quokka", 1) == ["Quokka.md"]


def test_query_of_only_very_common_words_still_answers(demo: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """When every word is too common to rank by (and so is their AND), search falls back to title
    matches and then to an unranked sample instead of scoring every passage, and still answers."""
    from engine.vault import _counts

    monkeypatch.setattr(_counts, "SELECTIVE", {"fts": (1, 0.0), "names": (1, 0.0), "docs": (1, 0.0)})
    monkeypatch.setattr(_counts, "AFFORDABLE", 1)
    demo.index._counts.clear()
    hits = demo.search("espresso grind")
    assert hits
    for hit in hits:
        text = demo.read_note(hit.path).body.lower()
        assert "espresso" in text and "grind" in text, hit.path


def test_conflict_copy_written_after_a_search_is_left_out(tmp_path: Path) -> None:
    """The notes the default filters refuse are remembered until the index changes: a sync-conflict
    copy added after a search takes no rank in the next one (the scores are those a fresh ``Vault``
    gives), and a copy renamed into a note comes back."""
    write_vault(
        tmp_path, {"Wombat.md": "# Wombat\n\nA wombat digs burrows.", "Other.md": "Burrows of rabbits."}
    )
    v = Vault(tmp_path)

    def ranked(vault: Vault) -> list[tuple[str, float]]:
        return [(h.path, h.score) for h in vault.search("wombat burrows")]

    assert [p for p, _ in ranked(v)] == ["Wombat.md", "Other.md"]
    copy = tmp_path / "Wombat (conflict 2026-04-02).md"
    copy.write_text("# Wombat\n\nA wombat digs wombat burrows.", encoding="utf-8")
    v.refresh()
    assert ranked(v) == ranked(Vault(tmp_path))
    assert [p for p, _ in ranked(v)] == ["Wombat.md", "Other.md"]
    assert copy.name in paths(v.search("wombat burrows", include_conflicts=True))
    copy.rename(tmp_path / "Wombat at night.md")
    v.refresh()
    assert "Wombat at night.md" in paths(v.search("wombat burrows"))


def test_query_of_only_common_words_is_still_ranked_while_bearable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing else ranked anything (every word common, and their AND too): the AND is still ranked by
    BM25 up to ``AFFORDABLE_LAST`` times the cap, and only past that taken as an unranked sample."""
    from engine.vault import _counts, _search

    notes: dict[str, str | bytes] = {
        "a.md": "Alpha and beta, once. " + FILLER * 4,
        "b.md": "Beta then alpha. " + FILLER * 4,
        "z.md": "Alpha beta. Alpha beta, alpha beta.",
    }
    v = Vault(write_vault(tmp_path, notes))
    v.refresh()
    monkeypatch.setattr(_counts, "SELECTIVE", {"fts": (1, 0.0), "names": (1, 0.0), "docs": (1, 0.0)})
    monkeypatch.setattr(_counts, "AFFORDABLE", 1)
    by_id = [p for p, _ in sorted(v.index.query("SELECT path, id FROM files"), key=lambda r: r[1])]
    assert by_id[0] != "z.md"  # else a sample (in index order) would also put it first
    assert top(v, "alpha beta", 1) == ["z.md"]
    monkeypatch.setattr(_search, "AFFORDABLE_LAST", 2)  # the AND's 3 passages are past it: a sample
    v.index._counts.clear()
    assert paths(v.search("alpha beta")) == by_id


def test_a_common_word_a_title_holds_is_still_found_inside_the_note_a_filter_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search inside one note (``path=``) for a word too common to rank by, which a note's title also
    holds ("plugins": the note *Plugins*): the named note is not in the filter, so it does not stand in
    for a result, and the passage of the filtered note is found (a second step reads a linked note so)."""
    from engine.vault import _counts

    notes: dict[str, str | bytes] = {
        "Plugins.md": "Plugins extend the app.",
        "People/zsv.md": "# Zsolt\nA person.\n## Author of\n### Plugins\n- [[Excalidraw]]\n",
        "a.md": "Plugins and more plugins. " + FILLER,
        "b.md": "Some plugins here. " + FILLER,
    }
    v = Vault(write_vault(tmp_path, notes))
    v.refresh()
    monkeypatch.setattr(_counts, "SELECTIVE", {"fts": (1, 0.0), "names": (1, 0.0), "docs": (1, 0.0)})
    monkeypatch.setattr(_counts, "AFFORDABLE", 1)
    v.index._counts.clear()
    hits = v.search("plugins", limit=1, path="People/zsv.md")
    assert [(h.path, h.heading) for h in hits] == [("People/zsv.md", "Plugins")]


def test_a_searching_index_keeps_a_larger_page_cache(demo: Vault) -> None:
    """A search reads the doclists and row sizes of its words: the index's connection keeps more of them
    than SQLite's default 2 MB from the first search on."""
    from engine.vault import _search

    demo.search("espresso grind")
    assert demo.index.query("PRAGMA cache_size")[0][0] == -_search.SEARCH_CACHE_KIB


def test_a_word_no_note_holds_costs_no_ranking_statement(
    demo: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An AND with a word no row holds, or an OR of such words, finds nothing: the counts already say so,
    and no ranking statement is issued for it."""
    issued = _issued(demo, monkeypatch)
    assert demo.search("zyxwvut qzqzqzq") == []
    assert not [sql for sql in issued if "bm25(" in sql]
    issued.clear()
    assert top(demo, "espresso qzqzqzq", 10)  # the word some note holds still ranks
    assert [sql for sql in issued if "bm25(" in sql]


def test_a_hit_that_vanishes_while_ranked_is_replaced_with_its_passage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The passages of the first ``limit`` hits are read with their notes' fields; a note gone by then
    (another process updated the index) is dropped, and the note that takes its place shows its own
    passage too."""
    from engine.vault import _fusion

    notes: dict[str, str | bytes] = {
        f"W{i}.md": f"# W{i}\n\n" + "wombat " * (9 - i) + FILLER for i in range(6)
    }
    v = Vault(write_vault(tmp_path, notes))
    v.refresh()
    assert top(v, "wombat", 4) == ["W0.md", "W1.md", "W2.md", "W3.md"]
    graph = _fusion.graph_neighbours

    def vanish_first(index: object, seeds: list[int]) -> dict[int, list[int]]:
        v.index.conn.execute("DELETE FROM files WHERE id = ?", (seeds[0],))
        return graph(v.index, seeds)

    monkeypatch.setattr(_fusion, "graph_neighbours", vanish_first)
    hits = v.search("wombat", limit=3)
    assert paths(hits) == ["W1.md", "W2.md", "W3.md"]
    for hit in hits:
        assert "wombat" in hit.snippet and "wombat" in hit.passage, hit.path


def test_a_query_that_names_a_note_shows_its_opening(tmp_path: Path) -> None:
    """Searching a note's title or alias shows what the note is (its first lines of prose), not the
    section where the name is densest; a first passage of properties and badges is passed over."""
    files = {
        "Concepts/Sherlocking.md": (
            "---\naliases: [Sherlocked]\n---\n# Sherlocking\n\nSherlocking refers to an app copying "
            "a feature a plugin provided.\n\n## Plugins sherlocked\n"
            "- Sherlocking: sherlocked sherlocked sherlocked\n"
        ),
        "Plugins/latex-ocr.md": (
            "---\nplugin-id: latex-ocr\n---\n![badge](https://img.shields.io/x.svg)\n%% Badges %%\n\n"
            "# Latex OCR\n\nPlugin ID: `latex-ocr`\nGenerate LaTeX equations from images in your vault.\n\n"
            "## Settings\nLatex OCR settings: Latex OCR server, Latex OCR model, Latex OCR timeout.\n"
        ),
    }
    root = tmp_path / "vault"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    vault = Vault(root)
    for query in ("Sherlocking", "sherlocked"):
        hit = vault.search(query, limit=1)[0]
        assert (hit.path, hit.heading) == ("Concepts/Sherlocking.md", "Sherlocking")
        assert hit.passage.startswith("# Sherlocking\n\nSherlocking refers to")
    hit = vault.search("Latex OCR", limit=1)[0]
    assert hit.heading == "Latex OCR" and "Generate LaTeX equations" in hit.snippet
    # Not named by the whole query: the best matching section, as before.
    assert vault.search("latex ocr timeout", limit=1)[0].heading == "Settings"


def _issued(v: Vault, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL statements ``v``'s index runs from now on."""
    issued: list[str] = []
    query = v.index.query

    def counting(sql: str, params: tuple[object, ...] | list[object] = ()) -> list[tuple[object, ...]]:
        issued.append(sql)
        return query(sql, params)

    monkeypatch.setattr(v.index, "query", counting)
    return issued


def test_a_query_of_common_words_ranks_the_notes_whose_names_hold_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every word is common, and so is their AND in passages ("Sync Obsidian"): the few notes whose names
    hold them all are ranked (the note titled "Obsidian Sync" first), and no passage is scored."""
    from engine.vault import _counts

    notes: dict[str, str | bytes] = {
        f"Log {i}.md": f"Sync with Obsidian, day {i}. " + FILLER for i in range(8)
    }  # the AND of the two words in passages: past what is ranked (4 times the cap of 1)
    notes["Sync for Obsidian mobile.md"] = "Phones too. " + FILLER  # two notes' names hold both
    notes["Obsidian Sync.md"] = "# Obsidian Sync\n\nThe paid service that keeps vaults in step. " + FILLER
    v = Vault(write_vault(tmp_path, notes))
    v.refresh()
    by_id = [p for p, _ in sorted(v.index.query("SELECT path, id FROM files"), key=lambda r: r[1])]
    assert by_id[0] != "Obsidian Sync.md"  # else the passages' unranked sample would also put it first
    monkeypatch.setattr(_counts, "SELECTIVE", {"fts": (1, 0.0), "names": (1, 0.0), "docs": (1, 0.0)})
    v.index._counts.clear()
    issued = _issued(v, monkeypatch)
    assert top(v, "Sync Obsidian", 1) == ["Obsidian Sync.md"]
    assert not [sql for sql in issued if "bm25(fts" in sql or "-1.0 FROM fts" in sql]  # nor sampled


def test_a_common_word_ranks_names_when_they_are_fewer_than_its_passages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Themes" alone, a word thousands of passages hold: the notes whose names hold it are ranked when
    they are fewer than those passages (1.4k names against 7k passages at 100 MB: 3 ms, not 14), though
    past the names' own bound."""
    from engine.vault import _counts

    notes: dict[str, str | bytes] = {
        f"{kind} themes.md": f"# {kind} themes\n\nThemes for {kind.lower()} setups. " + FILLER
        for kind in ("Dark", "Light", "Minimal", "Colourful", "Retro", "Print")
    }
    notes |= {f"Log {i}.md": f"Tried some themes on day {i}. " + FILLER for i in range(2)}
    v = Vault(write_vault(tmp_path, notes))
    v.refresh()
    # names: 6 rows, past 4 x their cap of 1; passages: 8 rows, within 4 x their cap of 2, and more
    monkeypatch.setattr(_counts, "SELECTIVE", {"fts": (2, 0.0), "names": (1, 0.0), "docs": (1, 0.0)})
    v.index._counts.clear()
    issued = _issued(v, monkeypatch)
    found = top(v, "themes", 6)
    assert found and all(p.endswith(" themes.md") for p in found)
    assert not [sql for sql in issued if "bm25(fts" in sql]


def test_an_alias_expansion_that_many_notes_hold_is_not_matched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An alias in a question adds its note's title as a phrase to the whole-note ranking, unless that
    phrase is common: matching it would cost the most of the search and rank nothing."""
    from engine.vault import _counts

    notes: dict[str, str | bytes] = {
        "Serial Peripheral Interface.md": "---\naliases: [SPI]\n---\nA four-wire bus for sensors.\n",
        "Bus speeds.md": "The serial peripheral interface runs at tens of MHz.\n",
    }
    v = Vault(write_vault(tmp_path, notes))
    v.refresh()
    matched: list[str] = []
    query = v.index.query

    def spy(sql: str, params: tuple[object, ...] | list[object] = ()) -> list[tuple[object, ...]]:
        if "bm25(docs" in sql:
            matched.extend(str(p) for p in params)
        return query(sql, params)

    monkeypatch.setattr(v.index, "query", spy)
    question = "How fast is the SPI bus on my sensors?"
    phrase = '"serial peripheral interface"'
    assert v.search(question)
    assert any(phrase in m for m in matched)  # rare here: the title joins the whole-note ranking
    matched.clear()
    monkeypatch.setattr(_counts, "SELECTIVE", {**_counts.SELECTIVE, "docs": (1, 0.0)})  # two notes hold it
    v.index._counts.clear()
    assert v.search(question)
    assert matched and not any(phrase in m for m in matched)


def test_a_date_in_words_finds_the_note_its_iso_date_names(tmp_path: Path) -> None:
    notes = {
        "Roundup/2022-08-20 Mobile Git Backups.md": "Eleanor is off to Worldcon in Chicago.\n",
        "Roundup/2022-07-20 Quick Share.md": "Worldcon is coming. Eleanor plans a Worldcon trip; Worldcon!\n",
        "Roundup/2022-09-20 Canvas.md": "Eleanor on Worldcon, the Worldcon city, Worldcon panels.\n",
        "Daily/2026-01-07.md": "Fixed the sink.\n",
        "Daily/2026-07-01.md": "Fixed the door, fixed the sink plug: fixed it all.\n",  # the same numbers
    }
    v = Vault(write_vault(tmp_path / "v", notes))
    asked = "In the August 20, 2022 roundup, which city was Eleanor going to for Worldcon?"
    assert paths(v.search(asked))[0] == "Roundup/2022-08-20 Mobile Git Backups.md"
    assert paths(v.search("What did I fix on the 7th of January 2026?"))[0] == "Daily/2026-01-07.md"


def test_a_month_in_words_finds_the_dated_note_of_that_part_of_the_month(tmp_path: Path) -> None:
    """ "The mid-January 2022 roundup" of a weekly series is the one of the 15th; the whole month names
    five notes, too many to name one (the text decides, as for any question)."""
    weekly = {
        f"Roundup/2022-01-{day:02d} Issue.md": "How much was offered for an RSS feed for Publish? A bounty.\n"
        for day in (1, 8, 22, 29)
    }
    notes = {
        **weekly,
        "Roundup/2022-01-15 Dataview Optimizations.md": "Paras offered $500 for a feed.\n",
        "Roundup/2021-04-17 RSS Tips.md": "RSS feed for Publish, an RSS bounty, RSS feeds for Publish.\n",
    }
    v = Vault(write_vault(tmp_path / "v", notes))
    asked = "In the mid-January 2022 roundup, how much was offered for an RSS feed for Publish?"
    assert paths(v.search(asked))[0] == "Roundup/2022-01-15 Dataview Optimizations.md"
    whole = paths(v.search("In the January 2022 roundup, how much was offered for an RSS feed for Publish?"))
    assert whole[0] != "Roundup/2022-01-15 Dataview Optimizations.md"


def test_a_section_most_notes_share_is_not_what_a_hit_shows(tmp_path: Path) -> None:
    """Every note ends with a template's footer ("This note in GitHub"): a hit shows its own passage."""
    footer = "\n## This note in GitHub\n[Edit this note in GitHub](https://github.dev/{n}) | Copy this note\n"
    notes = {f"Plugins/p{i}.md": f"# P{i}\n\nPlugin number {i} sorts lists.\n" + footer for i in range(30)}
    notes["People/sspaeti.md"] = "# sspaeti\n\nA bio will come here, one day.\n" + footer
    notes["Plugins/metatable.md"] = "# Metatable\n\nShows the frontmatter of a note as a table.\n" + footer
    v = Vault(write_vault(tmp_path / "v", notes))
    for query, path in (
        ("Which GitHub user is sspaeti?", "People/sspaeti.md"),  # found by its name
        ("What does the Metatable plugin show in a note in GitHub?", "Plugins/metatable.md"),
    ):
        hit = next(h for h in v.search(query) if h.path == path)
        assert hit.heading != "This note in GitHub", (query, hit)
    # a heading few notes share is shown as before
    few = Vault(write_vault(tmp_path / "few", {"a.md": "# A\n\nIntro.\n" + footer, "b.md": "# B\n\nText.\n"}))
    assert few.search("note in GitHub")[0].heading == "This note in GitHub"
