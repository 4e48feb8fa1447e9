"""``DirectSearchRetriever`` over the demo vault: whole sections with full-path citations, earlier runs'
reports kept out unless asked for, the goal as a fallback query, and the engine's own retrieval score."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from _demo import DEMO

from engine.retrieval import (
    SECTION_CHARS,
    ContextItem,
    DirectSearchRetriever,
    RetrievalResult,
    Retriever,
    citation_link,
    retrieval_score,
    section,
)
from engine.vault import VaultSet, parse_note

SIGNALS = {"best", "keyword_overlap", "coverage", "diversity", "boilerplate", "num_items", "total_chars"}
REPORT_WORD = "quorblefrotz"
FAKE_REPORT = f"""---
type: report
run_id: x
---

# Report on first crack

## Answer

First crack {REPORT_WORD} happens at 196 °C, according to an earlier run of Shad. {REPORT_WORD} first crack.
"""


pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def demo() -> Iterator[VaultSet]:
    """The demo vault, read in place (nothing here writes into it; the index lives in SHAD_HOME)."""
    vaults = VaultSet([DEMO])
    yield vaults
    vaults.close()


@pytest.fixture
def with_report(tmp_path: Path) -> Iterator[VaultSet]:
    """A copy of the demo vault holding an earlier run's report under Shad/History/Runs/x/."""
    root = tmp_path / "coffee"
    shutil.copytree(DEMO, root, symlinks=True)
    report = root / "Shad" / "History" / "Runs" / "x" / "final.report.md"
    report.parent.mkdir(parents=True)
    report.write_text(FAKE_REPORT, encoding="utf-8")
    vaults = VaultSet([root])
    yield vaults
    vaults.close()


def _retrieve(vaults: VaultSet, task: str, goal: str = "", **kwargs: object) -> RetrievalResult:
    retriever = DirectSearchRetriever(vaults, **kwargs)  # type: ignore[arg-type]
    return asyncio.run(retriever.retrieve(task, goal or task, "n1"))


# --- sections and citations --------------------------------------------------------------------------------


def test_the_direct_retriever_fits_the_retriever_interface(demo: VaultSet) -> None:
    retriever: Retriever = DirectSearchRetriever(demo)
    result = asyncio.run(retriever.retrieve("first crack temperature", "roasting", "n1"))
    assert isinstance(result, RetrievalResult)
    assert result.method == "direct"


def test_a_roasting_question_finds_the_first_crack_note(demo: VaultSet) -> None:
    result = _retrieve(demo, "When does first crack happen during a roast?")
    assert result.context
    paths = [c.path for c in result.context]
    assert "Roasting/First crack.md" in paths
    item = next(c for c in result.context if c.path == "Roasting/First crack.md")
    assert item.vault == demo.ids[0]
    assert item.citation.startswith("[[Roasting/First crack")
    assert "first crack" in item.text.lower()


def test_every_citation_is_a_full_path_wikilink_without_md_or_vault_prefix(demo: VaultSet) -> None:
    result = _retrieve(demo, "water hardness calcium magnesium alkalinity")
    assert len(result.context) >= 2
    for item in result.context:
        expected = "[[" + item.path[: -len(".md")] + (f"#{item.heading}" if item.heading else "") + "]]"
        assert item.citation == expected
        assert "/" in item.citation  # the folder is part of the link
        assert ".md" not in item.citation
        assert ":" not in item.citation.split("#")[0]  # no vault prefix with a single vault


def test_the_context_is_the_section_under_the_hits_heading(demo: VaultSet) -> None:
    result = _retrieve(demo, "Calcium and magnesium ions help extraction; Epsom salt hardness")
    item = next(c for c in result.context if c.path == "Water/Water chemistry.md")
    assert item.heading
    assert item.citation == f"[[Water/Water chemistry#{item.heading}]]"
    note = demo.read_note("Water/Water chemistry.md")
    heading = next(h for h in note.headings if h.text == item.heading)
    assert item.text.startswith("#" * heading.level + " " + item.heading)
    # the section runs up to the next heading of the same or a higher level, and no further
    later = [h for h in note.headings if h.offset > heading.offset and h.level <= heading.level]
    if later:
        assert "#" * later[0].level + " " + later[0].text not in item.text


def test_a_section_keeps_its_subsections_and_stops_at_the_next_sibling() -> None:
    vaults = VaultSet([DEMO])
    try:
        note = vaults.read_note("Water/Water chemistry.md")
        text = section(note, "Hardness", "")
        assert text.startswith("## Hardness")
        assert "### Calcium and magnesium" in text  # a subsection belongs to it
        assert "### Too soft, too hard" in text
        assert "## Alkalinity" not in text  # the next section of the same level does not
        assert "SCA recommends total hardness around 50–175 ppm" in text
        assert "capacity to neutralise acid" not in text
    finally:
        vaults.close()


def test_a_section_is_what_a_reader_sees() -> None:
    """Comments, an image's address and HTML tags are no context (a plugin note opens with them)."""
    body = (
        "%% ----- Badges ----- %%\n![GitHub stars](https://img.shields.io/x.svg) <b>Days Since</b>\n\n"
        "# Days Since\n\nDeveloped by: [[gndclouds]] <!-- - Discord: `@` -->\n"
    )
    text = section(parse_note("days-since.md", body.encode()), None, "")
    assert "Badges" not in text and "img.shields.io" not in text and "<b>" not in text
    assert "Discord" not in text
    assert "GitHub stars" in text and "Days Since" in text and "Developed by: [[gndclouds]]" in text


def test_a_long_section_is_cut_around_the_snippet() -> None:
    filler = "Filler sentence about nothing in particular. " * 80
    body = f"# Long\n\n## Part\n\n{filler}The needle sentence mentions zymurgy clearly. {filler}\n"
    note = parse_note("Long.md", body.encode())
    text = section(note, "Part", "…The needle sentence mentions zymurgy…")
    assert len(text) <= SECTION_CHARS
    assert "zymurgy" in text


def test_citation_link_shapes() -> None:
    assert citation_link("coffee", "Roasting/First crack.md", None, False) == "[[Roasting/First crack]]"
    assert (
        citation_link("coffee", "Water/Water chemistry.md", "Hardness", False)
        == "[[Water/Water chemistry#Hardness]]"
    )
    assert citation_link("coffee", "Water/Water chemistry.md", "Hardness", True) == (
        "[[coffee:Water/Water chemistry#Hardness]]"
    )
    assert citation_link("v", "Top.md", None, True) == "[[v:Top]]"


def test_with_several_vaults_citations_carry_the_vault_id(tmp_path: Path) -> None:
    coffee = tmp_path / "coffee"
    shutil.copytree(DEMO, coffee, symlinks=True)
    extra = tmp_path / "extra"
    (extra / "Tea").mkdir(parents=True)
    (extra / "Tea" / "Green tea.md").write_text(
        "# Green tea\n\n## Brewing\n\nBrew green tea with water at 80 °C; boiling water makes it bitter. "
        "Water hardness matters for tea as well.\n",
        encoding="utf-8",
    )
    for name in ("Oolong", "Black tea", "Matcha", "Rooibos", "Chai"):  # a tiny vault has no usable IDF
        (extra / "Tea" / f"{name}.md").write_text(f"# {name}\n\nNotes on {name.lower()} leaves.\n")
    vaults = VaultSet([coffee, extra])
    try:
        result = _retrieve(vaults, "water temperature hardness for brewing tea and coffee")
        assert {c.vault for c in result.context} == {"coffee", "extra"}
        for item in result.context:
            assert item.citation.startswith(f"[[{item.vault}:")
            assert item.citation == citation_link(item.vault, item.path, item.heading, True)
        assert "[[extra:Tea/Green tea#Brewing]]" in [c.citation for c in result.context]
    finally:
        vaults.close()


def test_citations_property_lists_vault_path_and_heading(demo: VaultSet) -> None:
    result = _retrieve(demo, "first crack")
    assert result.citations == [
        {"vault": c.vault, "path": c.path, "heading": c.heading} for c in result.context
    ]
    data = result.to_dict()
    assert data["citations"] == result.citations
    assert data["method"] == "direct"
    assert len(data["context"]) == len(result.context)


def test_the_limit_caps_the_number_of_sections(demo: VaultSet) -> None:
    result = _retrieve(demo, "coffee water roast grind espresso", limit=3)
    assert 1 <= len(result.context) <= 3


# --- history stays out unless asked ------------------------------------------------------------------------


def test_earlier_run_reports_are_never_returned_by_default(with_report: VaultSet) -> None:
    for task in (REPORT_WORD, f"first crack {REPORT_WORD}", "report on first crack 196 °C"):
        result = _retrieve(with_report, task)
        assert not any(c.path.startswith("Shad/") for c in result.context), result.why
        assert all(REPORT_WORD not in c.text for c in result.context)


def test_the_goal_fallback_does_not_let_history_in_either(with_report: VaultSet) -> None:
    result = _retrieve(with_report, "xyzzyplugh", goal=f"{REPORT_WORD} first crack")
    assert not any(c.path.startswith("Shad/") for c in result.context)


def test_include_history_returns_earlier_run_reports(with_report: VaultSet) -> None:
    # reports are indexed only for vaults opened with include_history (the orchestrator does that)
    assert not _retrieve(with_report, REPORT_WORD, include_history=True).context
    with_history = VaultSet([with_report.vaults[0].root], include_history=True)
    result = _retrieve(with_history, REPORT_WORD, include_history=True)
    paths = [c.path for c in result.context]
    assert "Shad/History/Runs/x/final.report.md" in paths
    item = next(c for c in result.context if c.path.startswith("Shad/"))
    assert REPORT_WORD in item.text
    assert item.citation.startswith("[[Shad/History/Runs/x/final.report")


# --- the goal as a fallback query --------------------------------------------------------------------------


def test_a_task_that_finds_little_falls_back_to_goal_and_task(demo: VaultSet) -> None:
    goal = "When does first crack happen during a roast?"
    result = _retrieve(demo, "xyzzyplugh", goal=goal)
    assert result.queries == ["xyzzyplugh", goal]
    assert result.context  # found through the goal
    assert "Roasting/First crack.md" in [c.path for c in result.context]


def test_a_task_that_finds_enough_does_not_use_the_goal(demo: VaultSet) -> None:
    result = _retrieve(demo, "first crack roasting temperature", goal="Something about water hardness")
    assert result.queries == ["first crack roasting temperature"]
    assert not any(c.path.startswith("Water/") for c in result.context)


def test_no_fallback_when_the_goal_is_the_task(demo: VaultSet) -> None:
    result = _retrieve(demo, "xyzzyplugh", goal="xyzzyplugh")
    assert result.queries == ["xyzzyplugh"]
    assert result.context == []
    assert result.retrieval_score == 0.0


def test_the_fallback_does_not_repeat_a_note_already_found(demo: VaultSet) -> None:
    result = _retrieve(demo, "xyzzyplugh", goal="first crack")
    keys = [(c.vault, c.path, c.heading) for c in result.context]
    assert len(keys) == len(set(keys))


# --- the engine's own score --------------------------------------------------------------------------------


def _item(path: str, text: str) -> ContextItem:
    return ContextItem("v", path, None, text, f"[[{path[:-3]}]]")


def test_retrieval_score_is_higher_for_relevant_context_than_for_junk() -> None:
    task = "At what temperature does first crack happen when roasting coffee?"
    relevant = [
        _item(
            "Roasting/First crack.md",
            "First crack happens around 196 °C bean temperature when roasting "
            "coffee; the beans pop audibly as steam and gas pressure fracture them.",
        ),
        _item(
            "Roasting/Roasting stages.md",
            "Roasting stages: drying, Maillard, first crack at about 196 °C, "
            "development, then optionally second crack for dark coffee.",
        ),
    ]
    junk = [
        _item("Misc/Lorem.md", "Lorem ipsum"),
        _item("Misc/Lorem.md", "Lorem ipsum"),
        _item("Misc/Other.md", "Nothing to see here at all."),
    ]
    good, good_signals = retrieval_score(task, relevant)
    bad, bad_signals = retrieval_score(task, junk)
    assert 0.0 <= bad < good <= 1.0
    assert good >= 0.6
    assert bad <= 0.2
    assert good_signals["keyword_overlap"] > bad_signals["keyword_overlap"]
    assert bad_signals["boilerplate"] > good_signals["boilerplate"]


def test_repeated_passages_and_a_single_note_lower_the_score() -> None:
    task = "first crack temperature"
    text = "First crack happens at around 196 °C; the temperature depends on the probe and the beans used."
    varied = [_item("A.md", text), _item("B.md", text + " Dense beans crack later.")]
    repeated = [_item("A.md", text), _item("A.md", text)]
    score_varied, sv = retrieval_score(task, varied)
    score_repeated, sr = retrieval_score(task, repeated)
    assert score_repeated < score_varied
    assert sr["diversity"] < sv["diversity"]


def test_a_strategy_stages_wording_around_the_goal_is_not_scored() -> None:
    """A stage task wraps the goal in what to do ("Define the objective, success criteria and
    constraints of: GOAL"): the passages are scored on the goal's words alone."""
    goal = "How do I dial in espresso?"
    passages = [
        _item(
            "Brewing/Espresso.md",
            "Dialing in espresso: fix the dose, then adjust the grind until the shot runs.",
        ),
        _item(
            "Journal/Dial-in.md", "Espresso dial-in log: 18 g in, 36 g out, grind one step finer each shot."
        ),
    ]
    staged = "Define the objective, success criteria and constraints of: " + goal
    assert retrieval_score(staged, passages)[0] == retrieval_score(goal, passages)[0] >= 0.6


def test_a_short_clause_the_vault_words_otherwise_does_not_make_a_covered_question_weak() -> None:
    """Questions count by their words: "what to listen for" (the vault says "hear") weighs one word
    against the eight of the question it qualifies, and the task stays above the weak threshold; a
    question of as many words the vault does not hold still pulls the score down."""
    passages = [
        _item(
            "Roasting/Popcorn popper roasting.md",
            "Plan a first light roast on a popcorn popper: the stages take about five minutes; "
            "timing is short, so drop soon after first crack.",
        ),
        _item("Equipment/Home roasters.md", "You need to hear first crack over the fan of the popper."),
    ]
    qualified = "Plan a first light roast on a popcorn popper: stages, timing and what to listen for."
    assert retrieval_score(qualified, passages)[0] >= 0.45
    half = "Plan a first light roast on a popcorn popper, and what is the history of lattice gauge theory?"
    assert retrieval_score(half, passages)[0] < retrieval_score(qualified, passages)[0]


def test_retrieval_score_of_nothing_is_zero() -> None:
    score, signals = retrieval_score("first crack", [])
    assert score == 0.0
    assert signals["keyword_overlap"] == 0.0


@pytest.mark.parametrize(
    "task", ["first crack", "water", "How do I dial in espresso?", "xyzzyplugh", "the and of", "ünïcödé ☕"]
)
def test_retrieval_score_is_always_within_zero_and_one(demo: VaultSet, task: str) -> None:
    result = _retrieve(demo, task)
    assert 0.0 <= result.retrieval_score <= 1.0
    assert result.confidence == result.retrieval_score
    for items in ([], result.context, result.context * 3):
        score, _ = retrieval_score(task, items)
        assert 0.0 <= score <= 1.0


def test_a_result_carries_its_signals_queries_and_reason(demo: VaultSet) -> None:
    result = _retrieve(demo, "When does first crack happen during a roast?")
    assert set(result.signals) >= SIGNALS
    assert result.signals["num_items"] == len(result.context)
    assert result.signals["total_chars"] == sum(len(c.text) for c in result.context)
    assert 0.0 <= result.signals["keyword_overlap"] <= 1.0
    assert result.retrieval_score > 0.5
    assert re.search(r"\d+ section\(s\) from \d+ note\(s\)", result.why)
    assert result.queries == ["When does first crack happen during a roast?"]


def test_relevant_retrieval_outscores_an_unrelated_task_end_to_end(demo: VaultSet) -> None:
    good = _retrieve(demo, "first crack roasting temperature")
    off = _retrieve(demo, "quantum chromodynamics gluon confinement lattice")
    assert good.retrieval_score > off.retrieval_score


# --- the link graph in the recovery ladder -----------------------------------------------------------------


def test_a_note_linked_from_a_hit_joins_the_context_when_it_holds_what_is_missing(tmp_path: Path) -> None:
    """The second step of a two-step question: the hit links to the note that holds the rest."""
    root = tmp_path / "v"
    (root / "Net").mkdir(parents=True)
    (root / "Net/Directory service.md").write_text(
        "# Directory service\n\nThe directory service keeps accounts; its protocol is [[LDAP]].\n"
    )
    (root / "Net/LDAP.md").write_text("# LDAP\n\nListens on port 389.\n")
    for i in range(8):  # notes that hold more of the question's words than the linked note does
        (root / f"Net/Service {i}.md").write_text(
            f"# Service {i}\n\nAnother directory service {i}, with its own protocol.\n"
        )
    task = "Which port does the directory service protocol listen on?"
    vaults = VaultSet([root])
    try:
        result = _retrieve(vaults, task, limit=2)
        paths = [c.path for c in result.context]
        assert paths[0] == "Net/Directory service.md"
        assert "Net/LDAP.md" in paths  # default retrieval: linked with the best hit, holds rare words
        # The ladder's step on its own: from context without it, the link to LDAP is followed.
        retriever = DirectSearchRetriever(vaults, limit=2)
        hits = vaults.search(task, limit=2)
        first = [c for c in result.context if c.path != "Net/LDAP.md"]
        linked = retriever.linked(task, [(h.vault, h.path) for h in hits], first)
    finally:
        vaults.close()
    assert [c.path for c in linked] == ["Net/LDAP.md"]
    assert "389" in linked[0].text and linked[0].citation == "[[Net/LDAP#LDAP]]"


def test_another_section_of_a_note_in_the_context_joins_when_it_holds_what_is_missing(tmp_path: Path) -> None:
    """The developer's note is in the context by its "Plugins" section; what the task lacks ("sociologist",
    and the theme) is in its opening and its "Themes" section: that section joins, once."""
    root = tmp_path / "v"
    (root / "People").mkdir(parents=True)
    (root / "Plugin.md").write_text("# Divide and Conquer\n\nDeveloped by: [[People/pseudometa]]\n")
    (root / "People/pseudometa.md").write_text(
        "# pseudometa\n\nIn my day job, I am a sociologist.\n\n## Author of\n\n### Plugins\n"
        "- [[Plugin|Divide and Conquer]]\n\n### Themes\n- Shimmering Focus, a theme for sociologists\n"
    )
    task = "The Divide and Conquer plugin's developer is a sociologist. What theme did that developer make?"
    vaults = VaultSet([root])
    try:
        retriever = DirectSearchRetriever(vaults, limit=2)
        note = vaults.read_note("People/pseudometa.md")
        text = section(note, "Plugins", "")
        plugins = ContextItem("v", "People/pseudometa.md", "Plugins", text, "[[People/pseudometa#Plugins]]")
        plugin = ContextItem("v", "Plugin.md", None, "Developed by: [[People/pseudometa]]", "[[Plugin]]")
        seeds = [("v", "Plugin.md"), ("v", "People/pseudometa.md")]
        linked = retriever.linked(task, seeds, [plugin, plugins])
    finally:
        vaults.close()
    assert [(c.path, c.heading) for c in linked] == [("People/pseudometa.md", "Themes")]
    assert "Shimmering Focus" in linked[0].text


def test_no_linked_notes_when_the_context_already_covers_the_task(demo: VaultSet) -> None:
    result = _retrieve(demo, "first crack")
    assert "notes linked with the best hits" not in result.queries


# --- the score weighs what the best single passage holds ---------------------------------------------------


def test_passages_that_each_hold_one_word_of_the_task_are_weak_over_the_demo_vault(demo: VaultSet) -> None:
    """ "Japanese tea ceremony": a "Japanese barista" and a "black tea" passage are not an answer (the lax
    score gave 0.75); a plain lookup stays strong. Weak is below the recovery ladder's threshold."""
    from engine.retrieval._codemode import RecoveryPolicy

    absent = _retrieve(demo, "Japanese tea ceremony")
    assert absent.context  # something was found: the score, not an empty result, must say it is weak
    assert absent.retrieval_score < RecoveryPolicy.low_score
    assert absent.signals["best"] < 0.5
    lookup = _retrieve(demo, "How long should roasted beans rest?")
    assert lookup.retrieval_score >= 0.8 and lookup.signals["best"] == 1.0


def test_a_word_counts_by_its_stem_never_by_a_longer_word_it_begins() -> None:
    task = "tea ceremonies"
    teach = [_item("A.md", "Baristas teach ceremony etiquette to every new hire at the roastery, weekly.")]
    tea = [_item("A.md", "A tea ceremony is an etiquette of preparing and serving tea to guests, slowly.")]
    assert 0.0 < retrieval_score(task, teach)[1]["best"] < 0.5  # "ceremony" only: "tea" is missing
    assert retrieval_score(task, tea)[1]["best"] == 1.0


def test_a_rare_word_weighs_more_than_one_every_passage_holds() -> None:
    task = "coffee cerrado"
    passages = [
        _item("A.md", "Coffee from Brazil, roasted medium for espresso, is a common house blend choice."),
        _item("B.md", "Coffee brewing ratios for filter and espresso differ by method and by taste."),
        _item("C.md", "Cerrado coffee is grown on high plateaus in Minas Gerais with mechanised harvests."),
    ]
    _, signals = retrieval_score(task, passages[:2])  # "cerrado" nowhere: most of the weight is missing
    assert signals["best"] < 0.3
    _, signals = retrieval_score(task, passages)
    assert signals["best"] == 1.0 and signals["coverage"] < 0.7
