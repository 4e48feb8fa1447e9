"""Retrieval beyond passage BM25 (``engine.vault._fusion``): whole-note BM25 with weighted fields, names
(titles, aliases) found inside a question, the link graph around the strongest hits, and their fusion.

Small vaults built in ``tmp_path``; one test over the real dev set (skipped without ``../shared``) checks
that recall beats a plain BM25 baseline computed in the test itself.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from engine import Vault
from engine.vault._fusion import (
    EXACT_BONUS,
    MAX_LINKS,
    FusionInput,
    Scoped,
    agreed_name,
    asked_kind,
    fuse,
    fuse_linked,
    graph_neighbours,
    key_matches,
    scoped_names,
)

pytestmark = pytest.mark.usefixtures("shad_home")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.\n"


def make_vault(root: Path, notes: dict[str, str]) -> Vault:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    vault = Vault(root)
    vault.refresh()
    return vault


def top(vault: Vault, query: str, n: int = 10, path: str | None = None) -> list[str]:
    return [h.path for h in vault.search(query, limit=10, path=path)][:n]


def test_alias_match_ranks_first(tmp_path: Path) -> None:
    v = make_vault(
        tmp_path,
        {
            "Hardware/Serial Peripheral Interface.md": "---\naliases: [SPI]\n---\nA four-wire bus.\n"
            + FILLER,
            "Hardware/Bus notes.md": "The SPI wiring in my sensor project uses SPI again and again. SPI.\n",
            "Hardware/Other.md": "Nothing about buses here.\n" + FILLER,
        },
    )
    assert top(v, "SPI", 1) == ["Hardware/Serial Peripheral Interface.md"]


def test_a_name_inside_a_question_lifts_its_note(tmp_path: Path) -> None:
    v = make_vault(
        tmp_path,
        {
            "Movies/Blade Runner.md": "---\ndirector: Ridley Scott\nyear: 1982\n---\n",
            "Movies/Review.md": "Who directed it? A director of note, directed with care; the director.\n",
            "Movies/Other.md": FILLER,
        },
    )
    assert top(v, "Who directed Blade Runner?", 1) == ["Movies/Blade Runner.md"]


def test_frontmatter_values_are_searchable(tmp_path: Path) -> None:
    v = make_vault(
        tmp_path,
        {
            "Books/Out of Control.md": "---\nauthor: '[[Kevin Kelly]]'\npages: 528\n---\n",
            "Books/Other.md": FILLER,
        },
    )
    assert top(v, "Kevin Kelly", 1) == ["Books/Out of Control.md"]


def test_heading_match(tmp_path: Path) -> None:
    v = make_vault(
        tmp_path,
        {
            "Guide.md": "# Guide\n\n"
            + FILLER * 3
            + "\n## Calibrating the espresso grinder\n\nTurn the dial.\n",
            "Misc.md": "Some words about a grinder in passing.\n" + FILLER * 3,
            "Other.md": FILLER,
        },
    )
    hits = v.search("calibrating espresso grinder", limit=5)
    assert hits[0].path == "Guide.md"
    assert hits[0].heading == "Calibrating the espresso grinder"


def test_note_linked_from_the_strongest_hit_is_found(tmp_path: Path) -> None:
    notes = {
        "Windows/Active Directory.md": "Active Directory stores accounts; it is built on [[LDAP]].\n"
        + FILLER,
        "Network/LDAP.md": "The directory protocol listens on port 389; the secure variant on port 636.\n",
    }
    # Many notes that mention "port" compete with the linked note for the second word of the question.
    for i in range(30):
        notes[f"Noise/Port {i}.md"] = f"Port {i} is a port; ports everywhere, port port.\n"
    v = make_vault(tmp_path, notes)
    found = top(v, "Active Directory is built on a protocol: which port?", 10)
    assert found[0] == "Windows/Active Directory.md"
    assert "Network/LDAP.md" in found


def test_graph_neighbours_follow_links_both_ways(tmp_path: Path) -> None:
    v = make_vault(
        tmp_path,
        {"A.md": "See [[B]].\n", "B.md": "Plain.\n", "C.md": "Back to [[A]].\n", "D.md": "Alone.\n"},
    )
    ids = dict(v.index.query("SELECT path, id FROM files"))
    neighbours = graph_neighbours(v.index, [ids["A.md"]])[ids["A.md"]]
    assert set(neighbours) == {ids["B.md"], ids["C.md"]}


def test_graph_neighbours_are_the_notes_links_resolve_to(tmp_path: Path) -> None:
    """One note of a name shared by two, the one Obsidian opens; attachments are no neighbours."""
    v = make_vault(
        tmp_path,
        {"A.md": "See [[B]] and ![[pic.png]].\n", "x/B.md": "One B.\n", "y/B.md": "Another B.\n"},
    )
    (tmp_path / "pic.png").write_bytes(b"\x89PNG")
    v.refresh()
    ids = dict(v.index.query("SELECT path, id FROM files"))
    resolved = v.resolve_link("B", "A.md")
    assert resolved in ("x/B.md", "y/B.md")
    assert graph_neighbours(v.index, [ids["A.md"]])[ids["A.md"]] == [ids[resolved]]
    assert graph_neighbours(v.index, [ids[resolved]])[ids[resolved]] == [ids["A.md"]]
    other = "y/B.md" if resolved == "x/B.md" else "x/B.md"
    assert graph_neighbours(v.index, [ids[other]])[ids[other]] == []


def test_graph_neighbours_of_several_seeds_leave_out_a_hubs_backlinks(tmp_path: Path) -> None:
    """All seeds in one call, each with its own links; a note linked from more than MAX_LINKS notes (a
    hub) gives none of its backlinks, but its own links out still count."""
    notes = {"Hub.md": "Links to [[B]].\n", "A.md": "See [[B]] and [[Hub]].\n", "B.md": "Plain.\n"}
    notes |= {f"Many/M{i}.md": "Up to [[Hub]].\n" for i in range(MAX_LINKS + 1)}
    v = make_vault(tmp_path, notes)
    ids = dict(v.index.query("SELECT path, id FROM files"))
    found = graph_neighbours(v.index, [ids["Hub.md"], ids["A.md"], ids["B.md"]])
    assert found[ids["Hub.md"]] == [ids["B.md"]]
    assert set(found[ids["A.md"]]) == {ids["B.md"], ids["Hub.md"]}
    assert set(found[ids["B.md"]]) == {ids["Hub.md"], ids["A.md"]}


def test_key_matches_finds_titles_and_aliases_in_a_question(tmp_path: Path) -> None:
    v = make_vault(
        tmp_path,
        {
            "Out of Control.md": "x\n",
            "Catalyst license.md": "---\naliases: [Catalyst]\n---\ny\n",
            "The.md": "",
        },
    )
    ids = dict(v.index.query("SELECT path, id FROM files"))
    found, exact, _ = key_matches(v.index, "How many pages does Out of Control have?")
    assert found[0] == ids["Out of Control.md"]
    assert ids["The.md"] not in found  # a stop-word title is not a name in a question
    found, exact, _ = key_matches(v.index, "catalyst")
    assert exact == {ids["Catalyst license.md"]}


def test_a_rare_one_word_name_counts_among_many(tmp_path: Path) -> None:
    """Four notes named by one word of the question are too many to tell which one it is about, unless
    the word is rare in the vault: "SPI" is, "data" and "protocol" are not."""
    common = "Data moves over a protocol on a line. " * 3
    notes = {f"Notes/Note {i}.md": common + FILLER for i in range(12)}
    notes |= {
        "Data.md": "Data.\n" + common,
        "Protocol.md": "Protocol.\n" + common,
        "Line.md": "Line.\n" + common,
        "Hardware/Serial Peripheral Interface.md": "---\naliases: [SPI]\n---\nA 4-wire serial protocol.\n"
        "Similar to I2C.\n",
        "Hardware/Bus lines.md": "Which line carries the data in a two-wire chip protocol? The data line.\n",
    }
    v = make_vault(tmp_path, notes)
    ids = dict(v.index.query("SELECT path, id FROM files"))
    question = "SPI is said to be similar to another two-wire chip protocol. Which line carries the data?"
    found, _, _ = key_matches(v.index, question)
    assert found == []  # four one-word names: none tells
    found, _, _ = key_matches(v.index, question, rare=lambda word: word == "spi")
    assert found == [ids["Hardware/Serial Peripheral Interface.md"]]
    assert top(v, question, 1) == ["Hardware/Serial Peripheral Interface.md"]


def test_a_rare_title_of_several_words_in_the_question_counts_most(tmp_path: Path) -> None:
    """The note whose title of two or more words the question uses, and few other notes do, is what the
    question is about; an alias (often the broader subject) and a title many notes use count as a name."""
    agents = "An agent acts for a principal. Agents are made of goals and rules. " * 2
    notes = {f"Economics/Agent {i}.md": agents + FILLER for i in range(6)}
    notes |= {
        "Machine Learning/AI Agent.md": "A collection of:\n- an AI model\n- a reasoning loop\n- tools\n",
        "Machine Learning/Agent Policy.md": "---\naliases: [AI agent policy]\n---\n" + agents,
        "Machine Learning/Reasoning Loop.md": "Think, act, observe, repeat.\n",
        "Topics/Obsidian Publish.md": "Publish notes as a site.\n",
        **{f"Publish/P{i}.md": "Obsidian Publish hosts a site.\n" for i in range(12)},
    }
    v = make_vault(tmp_path, notes)
    ids = dict(v.index.query("SELECT path, id FROM files"))

    def rare(name: str) -> bool:
        return len(v.index.query("SELECT rowid FROM docs WHERE docs MATCH ?", (f'"{name}"',))) <= 3

    named = key_matches(v.index, "What is an AI agent policy made of?", rare)
    assert named.found[0] == ids["Machine Learning/Agent Policy.md"]  # the longest name first
    assert ids["Machine Learning/Agent Policy.md"] not in named.phrases  # named by its alias
    named = key_matches(v.index, "What is an AI agent made of?", rare)
    assert named.phrases == {ids["Machine Learning/AI Agent.md"]}
    named = key_matches(v.index, "Is a reasoning loop part of an AI agent?", rare)
    assert len(named.found) == 2 and named.phrases == set()  # two notes named by title: neither is the one
    named = key_matches(v.index, "Does Obsidian Publish host media?", rare)
    assert ids["Topics/Obsidian Publish.md"] in named.found and named.phrases == set()  # 13 notes say it
    # Ranked lower by its passages and whole text than a note that talks about AI agents at length, the
    # note titled by the question's words still comes first; named by one word, it would not.
    ranked = {"passages": [2, 3, 4, 1], "docs": [2, 3, 4, 1], "keys": [1]}
    by_title = fuse(FusionInput(**ranked, phrases={1}))
    assert max(by_title, key=lambda f: by_title[f]) == 1
    by_word = fuse(FusionInput(**ranked))
    assert max(by_word, key=lambda f: by_word[f]) == 2


def test_a_title_the_question_asks_for_as_a_kind_names_nothing(tmp_path: Path) -> None:
    """ "Which AI assistant does it let you chat with?" asks for an AI assistant: the note titled "AI
    Assistant" is one candidate answer, not what the question is about; "What is an AI assistant?" is about
    it."""
    v = make_vault(
        tmp_path,
        {
            "Plugins/AI Assistant.md": "Chat with GPT models.\n",
            "Plugins/Chat with Bard.md": "Chat with Bard in a side pane. Mobile: no.\n",
            "People/Artel250.md": "Plugins: [[Chat with Bard]]\n",
        },
    )
    ids = dict(v.index.query("SELECT path, id FROM files"))
    question = "The GitHub user Artel250 has one plugin. Which AI assistant does it let you chat with?"
    named = key_matches(v.index, question, rare=lambda word: True)
    assert ids["Plugins/AI Assistant.md"] in named.found and named.phrases == set()
    named = key_matches(v.index, "What is an AI assistant for?", rare=lambda word: True)
    assert named.phrases == {ids["Plugins/AI Assistant.md"]}
    assert asked_kind("which ai assistant does it let you use", "ai assistant")
    assert asked_kind("what theme is dark", "theme")
    assert not asked_kind("which ai assistant plugins are there", "ai assistant")  # a name qualifying a kind
    assert not asked_kind("what is an ai assistant", "ai assistant")


def test_a_named_note_both_text_rankings_put_first_is_not_outweighed_by_a_title(tmp_path: Path) -> None:
    """ "What does uncurry do to a Haskell function's arguments?": the note the alias "uncurry" names is
    first by its passages and as a whole note; the note titled "Haskell Function", named in passing, stays
    below it (a title phrase lifts a note the text rankings under-rate, it does not overrule them)."""
    v = make_vault(
        tmp_path,
        {
            "Programming/Haskell Currying.md": (
                "---\naliases: [curry, uncurry]\n---\nCurrying turns a function of a pair of arguments "
                "into a function of the first argument returning a function of the second; uncurry does the "
                "reverse: it takes a curried function and returns a function of a pair of arguments.\n"
            ),
            "Programming/Haskell Function.md": "A Haskell function maps values to values.\n",
            "Programming/Haskell.md": "A lazy language. " + FILLER,
        },
    )
    question = "What does uncurry do to a Haskell function's arguments?"
    assert top(v, question, 1) == ["Programming/Haskell Currying.md"]
    assert agreed_name(FusionInput(passages=[1, 2], docs=[1, 3], keys=[2, 1])) == 1
    assert agreed_name(FusionInput(passages=[1, 2], docs=[1, 3], keys=[2])) is None  # not named
    assert agreed_name(FusionInput(passages=[1, 2], docs=[2, 1], keys=[1, 2])) is None  # not agreed


def test_a_name_that_only_says_where_to_look_counts_for_nothing_more(tmp_path: Path) -> None:
    """ "The mathematical objection to the Turing test" names the note "Turing Test" to point at a more
    specific one whose title adds words the question uses; so does "the 2022-07-30 Obsidian Roundup" for a
    note in the folder of that name. Without such words ("What is the Turing test?", a note "Well Made 145
    Kevin Kelly" for a question on Kevin Kelly), or with one common word only, the name still counts."""
    v = make_vault(
        tmp_path,
        {
            "Philosophy/Turing Test.md": "A test of machine intelligence.\n",
            "Philosophy/Turing Test Mathematical Objection.md": "Godel limits machines; Turing replied.\n",
            "Obsidian Roundup/Obsidian Roundup.md": "Weekly news.\n",
            "Obsidian Roundup/2022-07-30 Shirts and Tasks.md": "Free shipping with the code OBS.\n",
            "People/Kevin Kelly.md": "type: Authors\n",
            "Podcasts/Well Made.md": "A podcast.\n",
            "Podcasts/Well Made 145 Kevin Kelly.md": "An episode.\n",
        },
    )
    ids = dict(v.index.query("SELECT path, id FROM files"))
    hub, child = ids["Philosophy/Turing Test.md"], ids["Philosophy/Turing Test Mathematical Objection.md"]

    def scoped(query: str, named: int, other: int) -> set[int]:
        inputs = FusionInput(passages=[named, other], docs=[other, named], keys=[named])
        found = scoped_names(v.index, inputs, query, rare=lambda word: word == "145")
        assert found.specific == ({other} if found.broad else set())  # the note the name points at
        return found.broad

    assert scoped("How did Turing answer the mathematical objection to the Turing test?", hub, child) == {hub}
    assert scoped("What is the Turing test?", hub, child) == set()
    roundup, issue = (
        ids["Obsidian Roundup/Obsidian Roundup.md"],
        ids["Obsidian Roundup/2022-07-30 Shirts and Tasks.md"],
    )
    assert scoped("Which code did the 2022-07-30 Obsidian Roundup give?", roundup, issue) == {roundup}
    kelly, episode = ids["People/Kevin Kelly.md"], ids["Podcasts/Well Made 145 Kevin Kelly.md"]
    assert scoped("What type of person is Kevin Kelly listed as?", kelly, episode) == set()
    show = ids["Podcasts/Well Made.md"]
    assert scoped("Who was the guest of episode 145 of the Well Made podcast?", show, episode) == {
        show
    }  # rare
    assert scoped("Has Kevin been a guest on the Well Made podcast?", show, episode) == set()  # one word


def test_the_note_a_broad_name_points_at_comes_first(tmp_path: Path) -> None:
    """ "The mathematical objection to the Turing test": the note "Turing Test" says where to look, the
    note "Turing Test Mathematical Objection" is what is asked, and comes first even where the broad note
    is the stronger passage and whole-note hit (here it holds every word of the question, the other a long
    text of other words); a name inside the broad one ("Test") points no further."""
    v = make_vault(
        tmp_path,
        {
            "Philosophy/Turing Test.md": (
                "The Turing test asks whether a machine can pass as a person. Turing answered each "
                "objection in turn; the mathematical objection says a machine cannot prove what it cannot "
                "prove, and Turing responded that people cannot either. The test, the Turing test.\n"
            ),
            "Philosophy/Turing Test Mathematical Objection.md": (
                "Godel's theorem limits what a machine can prove. " + " ".join(f"w{i}" for i in range(300))
            ),
            "Test.md": "A test checks something.\n",
        },
    )
    question = "How did Turing respond to the mathematical objection to the Turing test?"
    assert top(v, question, 2) == [
        "Philosophy/Turing Test Mathematical Objection.md",
        "Philosophy/Turing Test.md",
    ]
    ids = dict(v.index.query("SELECT path, id FROM files"))
    hub, child, word = (
        ids[p]
        for p in ("Philosophy/Turing Test.md", "Philosophy/Turing Test Mathematical Objection.md", "Test.md")
    )
    inputs = FusionInput(passages=[hub, child, word], docs=[hub, child, word], keys=[hub, word])
    found = scoped_names(v.index, inputs, question)
    assert found.broad == {hub, word} and found.specific == {child}  # "Test" points at "Turing Test"


def test_a_note_named_by_an_alias_another_title_holds_is_broad_when_both_rankings_agree(
    tmp_path: Path,
) -> None:
    """ "On Linux, Web Clipper opens Obsidian but only the file name is saved": "Web Clipper" is an alias of
    the product's introduction, and the title of "Troubleshoot Web Clipper" holds it; when the passage and
    whole-note rankings both put that note first, the alias only said where to look. A note named by its
    own title ("What is an evergreen note?": "Evergreen") is what is asked, and is no broad name."""
    v = make_vault(
        tmp_path,
        {
            "Clipper/Introduction to Obsidian Web Clipper.md": (
                "---\naliases: [Web Clipper]\n---\nWeb Clipper is a browser extension that saves web pages "
                "to Obsidian. Web Clipper works in every browser and opens Obsidian to save each page.\n"
            ),
            "Clipper/Troubleshoot Web Clipper.md": (
                "## Only the file name is saved\nOn Linux, when Obsidian opens but only the file name is "
                "saved, the likely cause is that Obsidian was installed from a package without URI support.\n"
            ),
            "Evergreen.md": "Evergreen notes are ideas written to last.\n",
            "Evergreen notes grow.md": "Evergreen notes grow as ideas do; an evergreen note is an idea.\n",
        },
    )
    question = (
        "On Linux, Web Clipper opens Obsidian but only the file name is saved. What is the likely cause?"
    )
    assert top(v, question, 1) == ["Clipper/Troubleshoot Web Clipper.md"]
    ids = dict(v.index.query("SELECT path, id FROM files"))
    intro, trouble = (
        ids["Clipper/Introduction to Obsidian Web Clipper.md"],
        ids["Clipper/Troubleshoot Web Clipper.md"],
    )
    inputs = FusionInput(passages=[trouble, intro], docs=[trouble, intro], keys=[intro])
    assert scoped_names(v.index, inputs, question) == Scoped({intro}, {trouble})
    inputs = FusionInput(passages=[intro, trouble], docs=[trouble, intro], keys=[intro])
    assert scoped_names(v.index, inputs, question) == Scoped(set(), set())  # the rankings disagree
    named, longer = ids["Evergreen.md"], ids["Evergreen notes grow.md"]
    inputs = FusionInput(passages=[longer, named], docs=[longer, named], keys=[named])
    assert scoped_names(v.index, inputs, "What is an evergreen note?") == Scoped(set(), set())


def test_fusion_keeps_exact_title_hits_first() -> None:
    inputs = FusionInput(passages=[1, 2, 3], docs=[1, 2, 3], keys=[2], exact={3})
    scores = fuse(inputs, graph={1: [2, 3, 4], 2: [1, 3]})
    assert max(scores, key=lambda f: scores[f]) == 3
    assert scores[3] >= EXACT_BONUS
    assert 4 not in scores  # the graph re-ranks what the query found; it adds no unmatched note


def test_fusion_lifts_notes_linked_with_the_strongest_hits() -> None:
    inputs = FusionInput(passages=[1, 2, 3, 4], docs=[1, 2, 4, 3])
    plain = fuse(inputs)
    assert plain[3] < plain[4]
    linked = fuse(inputs, graph={1: [3], 2: [3]})
    assert linked[3] > linked[4]  # linked with both strongest hits
    assert max(linked, key=lambda f: linked[f]) == 1


def test_exact_title_stays_first_in_search(tmp_path: Path) -> None:
    v = make_vault(
        tmp_path,
        {
            "Cold brew.md": "Steep coarse grounds overnight.\n",
            "Brewing.md": "Cold brew, cold brew and more cold brew: cold brew everywhere. Cold brew.\n",
        },
    )
    assert top(v, "cold brew", 1) == ["Cold brew.md"]


def test_changed_note_leaves_no_stale_whole_note_row(tmp_path: Path) -> None:
    v = make_vault(tmp_path, {"A.md": "zebrafish aquarium\n", "B.md": "other words\n"})
    assert top(v, "zebrafish", 1) == ["A.md"]
    (tmp_path / "A.md").write_text("now about pelicans only\n")
    v.refresh()
    assert top(v, "zebrafish") == []
    assert top(v, "pelicans", 1) == ["A.md"]
    (tmp_path / "A.md").unlink()
    v.refresh()
    assert top(v, "pelicans") == []
    assert v.index.query("SELECT count(*) FROM docs WHERE docs MATCH 'pelicans'")[0][0] == 0


def test_filters_apply_to_names_and_links(tmp_path: Path) -> None:
    v = make_vault(
        tmp_path,
        {
            "In/Blade Runner.md": "film\n",
            "Out/Blade Runner notes.md": "Blade Runner is a film. [[Blade Runner]]\n",
        },
    )
    assert top(v, "Blade Runner", 1) == ["In/Blade Runner.md"]  # the exact title, found by name
    assert top(v, "Blade Runner", path="Out") == ["Out/Blade Runner notes.md"]


def test_linked_notes_come_from_the_index(tmp_path: Path) -> None:
    v = make_vault(
        tmp_path,
        {
            "A.md": "See [[B]] and [[C|the other one]].\n",
            "B.md": "Bees make honey.\n",
            "C.md": "Cats sleep.\n",
            "D.md": "Back to [[A]]; honey too.\n",
        },
    )
    assert sorted(v.linked("A.md")) == ["B.md", "C.md", "D.md"]
    assert v.linked("A.md", "honey") == ["B.md", "D.md"] or v.linked("A.md", "honey") == ["D.md", "B.md"]
    assert v.linked("A.md", "zebras") == []  # no linked note holds the word


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_recall", ROOT / "benchmarks" / "bench_recall.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_recall", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.real_vaults
@pytest.mark.skipif(not (SHARED / "eval" / "dev_questions.jsonl").is_file(), reason="../shared is absent")
def test_recall_beats_plain_bm25_on_the_dev_set_the_other_vaults_and_the_blind_sets() -> None:
    """The dev set (zettelkasten-dy), the question sets of the other real vaults and the blind sets (written
    at random notes by someone who never saw the search code), each against a plain BM25 (whole notes,
    title boosted) computed here over the same notes: never below it on any vault; above it over each
    group, at rank 1 and in mean reciprocal rank (gold notes ranked higher). The held-out sets (never tuned
    on) are held to the group bar only: on zettelkasten-dy's 24 held-out questions search is below BM25 at
    rank 1 (16 against 17 at 3835485)."""
    bench = _bench()
    sets = bench.question_sets(SHARED)
    assert sets[0][0] == "zettelkasten-dy"
    groups = {g: bench.blind_sets(SHARED, g) for g in ("blind", "held_out")}
    groups = {"main": sets, **groups}
    assert len(groups["blind"]) == 4 and len(groups["held_out"]) == 3
    vaults: dict[Path, tuple[Vault, Any]] = {}
    for group, question_sets in groups.items():
        totals = {system: {"r@1": 0.0, "r@10": 0.0, "mrr@10": 0.0} for system in ("shad", "bm25")}
        for name, vault_dir, qfile in question_sets:
            if vault_dir not in vaults:
                vault = Vault(vault_dir)
                vault.refresh()
                vaults[vault_dir] = (vault, bench.Bm25Baseline(vault.root, vault.list_notes()))
            vault, baseline = vaults[vault_dir]
            questions = bench.load_questions(qfile)
            n = sum(1 for q in questions if q["kind"] != "absent")
            shad = bench.score(questions, lambda q, v=vault: [h.path for h in v.search(q, limit=10)])
            bm25 = bench.score(questions, baseline.search)
            for key in ("r@1", "r@10", "mrr@10"):
                assert group == "held_out" or shad[key] >= bm25[key], (group, name, key, shad, bm25)
                totals["shad"][key] += shad[key] * n
                totals["bm25"][key] += bm25[key] * n
        assert totals["shad"]["r@1"] > totals["bm25"]["r@1"], (group, totals)
        assert totals["shad"]["mrr@10"] > totals["bm25"]["mrr@10"], (group, totals)
        if group == "main":
            assert totals["shad"]["r@10"] > totals["bm25"]["r@10"], totals
    for vault, _baseline in vaults.values():
        vault.close()


def test_graph_neighbours_of_many_seeds(tmp_path: Path) -> None:
    """More seeds than one statement takes: each still gets its own links."""
    notes = {f"N{i}.md": f"Next: [[N{i + 1}]].\n" for i in range(130)}
    v = make_vault(tmp_path, notes)
    ids = dict(v.index.query("SELECT path, id FROM files"))
    seeds = [ids[f"N{i}.md"] for i in range(1, 129)]
    found = graph_neighbours(v.index, seeds)
    for i in range(1, 129):
        assert set(found[ids[f"N{i}.md"]]) == {ids[f"N{i - 1}.md"], ids[f"N{i + 1}.md"]}, i


def test_graph_neighbours_leave_out_a_hubs_links_out(tmp_path: Path) -> None:
    """A note linking to more than MAX_LINKS notes gives none of them (its backlinks still count)."""
    notes = {f"Many/M{i}.md": "Plain.\n" for i in range(MAX_LINKS + 1)}
    notes["Hub.md"] = "".join(f"[[M{i}]]\n" for i in range(MAX_LINKS + 1))
    notes["A.md"] = "Up to [[Hub]].\n"
    v = make_vault(tmp_path, notes)
    ids = dict(v.index.query("SELECT path, id FROM files"))
    assert graph_neighbours(v.index, [ids["Hub.md"]])[ids["Hub.md"]] == [ids["A.md"]]


def test_graph_neighbours_count_notes_not_links(tmp_path: Path) -> None:
    """More links than MAX_LINKS, but to and from few notes (one linked many times, both ways): not a
    hub, so every note counts, the one linked once after them too."""
    many = "[[A]]\n" * (MAX_LINKS + 5)
    notes = {"B.md": "Plain.\n", "C.md": "Plain.\n", "D.md": many, "E.md": "Once: [[A]]\n"}
    notes["A.md"] = "[[C]]\n" * (MAX_LINKS + 5) + "[[B]]\n"
    v = make_vault(tmp_path, notes)
    ids = dict(v.index.query("SELECT path, id FROM files"))
    found = graph_neighbours(v.index, [ids["A.md"]])[ids["A.md"]]
    assert found == sorted(ids[n] for n in ("B.md", "C.md", "D.md", "E.md"))


def test_fuse_linked_follows_the_links_of_the_strongest_notes(tmp_path: Path) -> None:
    """The lists fused once give what fusing for the seeds and again with their links gives: the seeds are
    the strongest notes with the exact-name bonus, the lift goes by their rank without it."""
    notes = {f"N{i}.md": f"[[N{i + 1}]] [[N{i + 7}]]\n" for i in range(12)}
    v = make_vault(tmp_path, notes)
    ids = sorted(r[0] for r in v.index.query("SELECT id FROM files"))
    inp = FusionInput(passages=ids[:8], docs=ids[4:10][::-1], keys=ids[9:], exact={ids[11]})
    first = fuse(inp)
    seeds = sorted(first, key=lambda f: -first[f])[:3]
    assert ids[11] in seeds
    expected = fuse(inp, graph_neighbours(v.index, seeds))
    assert expected != fuse(inp)
    assert fuse_linked(v.index, inp) == expected
