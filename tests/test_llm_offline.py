"""The offline provider: no model, honest about it, extractive, cited, deterministic."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import strategies
from engine.llm._base import LLMRequest, LLMResponse, Provider, ProviderError, Tier
from engine.llm._offline_text import answer_weight, display_text, passages, rank_passages, wanted_answers
from engine.llm.offline import JUDGE_THRESHOLD, MAX_PASSAGES, MODEL, NOTHING_FOUND, OfflineProvider
from engine.retrieval.citations import extract_citations, make_citation, resolve_citations
from engine.vault import Note, Vault, VaultSet

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def demo(demo_vault: Path) -> Iterator[VaultSet]:
    vaults = VaultSet([Vault(demo_vault, "demo")])
    yield vaults
    vaults.close()


def _complete(purpose: str, inputs: dict[str, Any], prompt: str = "") -> LLMResponse:
    request = LLMRequest(
        purpose, Tier.WORKER, prompt, inputs=inputs, expect_json=purpose in ("decompose", "judge")
    )
    return asyncio.run(OfflineProvider().complete(request))


def _section(note: Note, heading: str | None) -> str:
    if heading is None:
        return note.body
    for i, h in enumerate(note.headings):
        if h.text == heading:
            later = [x.offset for x in note.headings[i + 1 :] if x.level <= h.level]
            return note.body[h.offset : later[0] if later else len(note.body)]
    raise AssertionError(f"no heading {heading!r} in {note.path}")


def _context(vaults: VaultSet, *refs: tuple[str, str | None]) -> list[dict[str, Any]]:
    items = []
    for path, heading in refs:
        note = vaults.get("demo").read_note(path)
        items.append({
            "vault": "demo", "path": note.path, "heading": heading, "text": _section(note, heading),
            "citation": make_citation("demo", note.path, heading),
        })  # fmt: skip
    return items


def _lines(answer: str) -> list[tuple[str, str]]:
    """(quoted passage, citation) per answer line."""
    out = []
    for line in answer.splitlines():
        m = re.fullmatch(r"- (.+) (\[\[[^\]]+\]\])", line)
        assert m, f"answer line not of the form '- passage [[citation]]': {line!r}"
        out.append((m.group(1), m.group(2)))
    return out


DTR_CONTEXT = (
    ("Roasting/Development time.md", "The rule of thumb"),
    ("Roasting/Development time.md", "Formula"),
    ("Water/Water chemistry.md", "Hardness"),
    ("Roasting/Resting beans.md", "How long to rest"),
    ("Roasting/Logging roasts.md", None),
)


# --- identity and protocol ------------------------------------------------------------------------------


def test_provider_says_what_it_is() -> None:
    provider = OfflineProvider()
    assert isinstance(provider, Provider) and provider.name == "offline"
    response = _complete("answer", {"task": "t", "context": []}, prompt="x" * 400)
    assert (response.provider, response.model, response.stop_reason) == ("offline", MODEL, "offline")
    assert response.input_tokens == 100  # ~4 characters per token, from the prompt it was given
    assert response.output_tokens == (len(response.text) + 3) // 4
    asyncio.run(provider.aclose())


def test_unknown_purpose_is_a_provider_error() -> None:
    with pytest.raises(ProviderError) as err:
        _complete("telepathy", {})
    assert err.value.kind == "bad_request" and err.value.provider == "offline"


# --- answer ---------------------------------------------------------------------------------------------


def test_answer_is_extractive_and_cites_only_the_context(demo: VaultSet) -> None:
    context = _context(demo, *DTR_CONTEXT)
    inputs = {
        "task": "What development time ratio is a common target?",
        "goal": "Roast better",
        "context": context,
    }
    answer = _complete("answer", inputs).text
    lines = _lines(answer)
    assert 1 <= len(lines) <= MAX_PASSAGES
    given = {c["citation"] for c in context}
    # every citation is one the context gave, written exactly as given (the notes' own links are not)
    assert {c.raw for c in extract_citations(answer)} <= given
    for passage, citation in lines:
        item = next(c for c in context if c["citation"] == citation)
        assert passage.removesuffix(" …") in display_text(item["text"]), passage  # quoted, not written
    # the best passage comes first
    assert "20–25 %" in lines[0][0] and lines[0][1] == "[[Roasting/Development time#The rule of thumb]]"
    # and every citation resolves in the vault
    assert all(r.resolved for r in resolve_citations(extract_citations(answer), demo))


def test_answer_is_deterministic_and_deduplicated(demo: VaultSet) -> None:
    context = _context(demo, *DTR_CONTEXT)
    doubled = [*context, dict(context[0], citation="[[Roasting/Development time]]")]
    inputs = {"task": "What development time ratio is a common target?", "goal": "", "context": doubled}
    first = _complete("answer", inputs).text
    assert all(_complete("answer", json.loads(json.dumps(inputs))).text == first for _ in range(3))
    quoted = [p for p, _ in _lines(first)]
    assert len(quoted) == len(set(quoted))


def test_answer_ranks_definitions_and_quantities_first(demo: VaultSet) -> None:
    context = _context(
        demo, ("Roasting/Development time.md", "Formula"), ("Roasting/Roasting stages.md", "First crack")
    )
    first = _lines(_complete("answer", {"task": "What is first crack?", "context": context}).text)[0][0]
    assert first.startswith(("This is First crack", "First crack is"))
    context = _context(
        demo, ("Roasting/Roasting stages.md", "First crack"), ("Roasting/Resting beans.md", None)
    )
    first = _lines(_complete("answer", {"task": "How long should beans rest?", "context": context}).text)[0][
        0
    ]
    assert first.startswith("Rest 3–7 days")


def test_answer_says_plainly_when_nothing_is_relevant(demo: VaultSet) -> None:
    context = _context(demo, ("Water/Water chemistry.md", "Hardness"))
    answer = _complete(
        "answer", {"task": "Best reply to the Sicilian Defence in chess", "context": context}
    ).text
    assert answer.startswith(NOTHING_FOUND) and "[[" not in answer
    empty = _complete("answer", {"task": "anything at all", "context": []}).text
    assert empty.startswith(NOTHING_FOUND) and "no vault passages" in empty


def test_answer_skips_uncitable_items_and_garbage() -> None:
    context: list[Any] = [
        {"text": "Rest beans for seven days before brewing espresso.", "citation": ""},
        None, "text", {"citation": "[[X]]"},
        {"text": "Rest beans three days before brewing filter coffee.",
         "citation": "[[Roasting/Resting beans]]"},
    ]  # fmt: skip
    answer = _complete("answer", {"task": "How long to rest beans?", "context": context}).text
    assert answer == "- Rest beans three days before brewing filter coffee. [[Roasting/Resting beans]]"


def test_a_short_code_block_is_quoted_with_the_sentence_that_introduces_it() -> None:
    text = (
        "## Embed a note\n\nTo embed a note:\n\n```md\n![[Internal links]]\n```\n\n"
        "You can also embed [[Internal links#Link to a heading in a note|headings]].\n\n"
        "```md\n![[Internal links#^b15695]]\n```\n\nUse the `![[File.base#View]]` syntax for a view.\n\n"
        "- [[Obsidian Publish/Security and privacy|Security and privacy]]\n"
        "A long example:\n\n```\none\ntwo\nthree\nfour\n```\n"
    )
    assert passages(text) == [
        "To embed a note: `![[Internal links]]`",
        "You can also embed headings. `![[Internal links#^b15695]]`",
        "Use the `![[File.base#View]]` syntax for a view.",  # inline code keeps its link
        "A long example:",  # too long a block to quote inline; a list of links says nothing
    ]


def test_a_passage_that_states_the_answer_ranks_above_one_that_points_elsewhere() -> None:
    items = [
        ("Embed files", "For more on embedding headings, see Embed files."),
        ("Embed files", "Does Obsidian support embedding headings?"),
        ("Embed files", "To embed a heading, add ! before the link: `![[Note#Heading]]`"),
    ]
    ranked = rank_passages("How do I embed a heading?", items)
    assert ranked[0].text.endswith("`![[Note#Heading]]`")
    assert answer_weight(ranked[0].text) > 0 > answer_weight(items[0][1]) and answer_weight(items[1][1]) < 0


def test_the_noun_a_clause_points_back_with_counts_for_what_it_points_at_only() -> None:
    items = [
        ("Developer-Mike People/Developer-Mike.md", "- Website: https://developer-mike.dev"),
        ("pejakovic People/pejakovic.md", "- Website: https://github.com/pejakovic"),
    ]
    query = "What website does that developer list?"
    assert "developer-mike" in rank_passages(query, items)[0].text  # the note's name holds "developer"
    ranked = rank_passages(query, items, referents=frozenset({1}))
    assert ranked[0].text.endswith("github.com/pejakovic") and ranked[1].score < ranked[0].score


def test_a_quantifier_of_the_question_is_not_a_word_to_find() -> None:
    """ "List *every* plugin made by pjeby" had quoted the plugin *Every Day Calendar* first."""
    items = [
        ("Every Day Calendar Plugins/every-day-calendar.md", "Plugin ID: `every-day-calendar`"),
        ("Tag Wrangler Plugins/tag-wrangler.md", "Developed by: pjeby"),
    ]
    ranked = rank_passages("List every plugin made by pjeby", items)
    assert ranked[0].text == "Developed by: pjeby" and all(p.score < ranked[0].score for p in ranked[1:])


def test_a_label_with_only_an_identifier_or_an_address_names_a_thing_and_says_nothing() -> None:
    """ "Plugin ID: `obsidian-spaced-repetition`" and a footer of edit links had been quoted as answers:
    the question's words were inside the identifier and the address."""
    items = [
        (
            "Spaced Repetition Plugins/obsidian-spaced-repetition.md",
            "Plugin ID: `obsidian-spaced-repetition`",
        ),
        ("Anki Tools/Anki.md", "This note in GitHub: [Edit In GitHub](https://github.dev/hub/Anki.md)"),
        (
            "Misc/tools.md",
            "Links: GitHub repository (https://github.com/carlrobert/double-switch) | Get it here (https://x.y/z)",
        ),
        ("Recall Plugins/recall.md", "Recall implements spaced repetition for reviewing notes."),
    ]
    ranked = rank_passages("Which plugins export notes for spaced repetition and switch?", items)
    assert [p.text for p in ranked] == ["Recall implements spaced repetition for reviewing notes."]
    # a label the question asks for keeps its address: the answer to "what is their website?"
    website = [("kon-foo People/kon-foo.md", "Website: https://kon.foo/")]
    assert [p.text for p in rank_passages("What is kon-foo's website?", website)] == [
        "Website: https://kon.foo/"
    ]


def test_a_date_property_answers_only_a_question_that_asks_when() -> None:
    items = [
        ("Notes/Evergreen notes.md", "created: 2023-09-14\nEvergreen notes grow by small composable ideas."),
    ]
    how = [p.text for p in rank_passages("How are evergreen notes organized?", items)]
    assert how == ["Evergreen notes grow by small composable ideas."]
    when = [p.text for p in rank_passages("When was the evergreen notes note created?", items)]
    assert "created: 2023-09-14" in when


def test_a_web_address_property_answers_a_website_question() -> None:
    items = [
        ("References/Steph Ango.md", "categories: People\nurl: https://stephango.com/"),
        ("Readme.md", "My personal vault template, on my site."),
    ]
    ranked = rank_passages("What is the personal website of the host?", items)
    assert any(p.text == "url: https://stephango.com/" for p in ranked)  # "url" is the website asked for


def test_passages_are_quotable_units() -> None:
    text = (
        "## Heading\n\nFirst sentence here. Second one, e.g. with an abbreviation. ^blk\n"
        "- a list item with words\n| cell one | cell two |\n|---|---|\n```\ncode line here\n```\n"
        "See [[Roasting/First crack|first crack]] and [[Water/Water chemistry#Hardness]]. ![[img.png]]"
    )
    assert passages(text) == [
        "First sentence here.",
        "Second one, e.g. with an abbreviation.",
        "a list item with words",
        "| cell one | cell two |",
        "See first crack and Water chemistry > Hardness.",
    ]


def test_a_question_the_text_asks_itself_is_quoted_with_its_answer() -> None:
    text = (
        "## TL;DR\n*Should* one store health data in it? No, as of this date. Is it possible? Yes, with "
        "safeguards. A plain sentence.\n- Is a list item a question? It stays one unit."
    )
    assert passages(text) == [
        "*Should* one store health data in it? No, as of this date.",
        "Is it possible? Yes, with safeguards.",
        "A plain sentence.",
        "Is a list item a question? It stays one unit.",
    ]
    # The answer alone names nothing the query asks for; with its question it is quoted and ranks first.
    ranked = rank_passages("Should health data be stored in it?", [("Primer", text)])
    assert ranked[0].text.endswith("No, as of this date.")


def test_a_byline_answers_who_wrote_a_book() -> None:
    note = (
        "A book about the risks of AI that is grown rather than crafted.\nBy [[Eliezer Yudkowsky]] and "
        "Nate Soares\n# Notes\n- Superhuman AI would be built to want things"
    )
    items = [("Machine Learning/If Anyone Builds It Everyone Dies", note)]
    ranked = rank_passages("Who co-wrote the book arguing that building a superhuman AI is deadly?", items)
    assert ranked[0].text == "By Eliezer Yudkowsky and Nate Soares"
    assert ranked[0].coverage > 0.15  # enough to be quoted (the question's "co-wrote" is what it answers)
    # Without a "who made it?" question, a byline is only a line that shares no word with the query.
    other = rank_passages("What is the book arguing about superhuman AI?", items)
    assert all(not p.text.startswith("By ") for p in other[:1])


# --- decompose ------------------------------------------------------------------------------------------


def test_decompose_uses_skeleton_and_goal_clauses() -> None:
    goal = "What is first crack? How long should development last? Compare light and dark roasts."
    sk = strategies.get("analysis")
    inputs = {"goal": goal, "strategy": "analysis", "stages": sk.stage_dicts(), "max_children": 8}
    response = _complete("decompose", inputs)
    assert json.loads(response.text) == response.data
    nodes = response.data["nodes"]
    tasks = [n["task"] for n in nodes]
    for clause in (
        "What is first crack?",
        "How long should development last?",
        "Compare light and dark roasts.",
    ):
        assert clause in tasks
    assert next(n for n in nodes if n["task"].startswith("Compare"))["stage"] == "compare_options"
    plan = strategies.validate_plan(response.data, sk, 8, 8, goal=goal)
    assert plan.restored == [] and plan.dropped == [] and plan.problems == []  # a valid plan as it stands
    assert {s.name for s in sk.stages if s.needs_node} <= {n["stage"] for n in nodes}
    assert _complete("decompose", inputs).data == response.data  # deterministic


def test_decompose_respects_max_children_and_enumerations() -> None:
    sk = strategies.get("planning")
    goal = "1. buy a grinder 2. learn pour-over 3. roast a first batch 4. taste 5. log it 6. repeat"
    data = _complete("decompose", {"goal": goal, "stages": sk.stage_dicts(), "max_children": 4}).data
    assert len(data["nodes"]) == 4
    assert {s.name for s in sk.stages if s.needs_node} <= {n["stage"] for n in data["nodes"]}
    assert "buy a grinder" in [n["task"] for n in data["nodes"]]
    assert strategies.validate_plan(data, sk, 4, 4).problems == []


def test_a_clause_that_points_back_depends_on_the_one_before_it() -> None:
    """ "... and what website does *that developer* list?" is the second step of a two-step question: it
    runs after the first, and so retrieves knowing what that one found."""
    sk = strategies.get("analysis")
    goal = "Who developed the KaTeX to MathJax plugin, and what website does that developer list?"
    data = _complete("decompose", {"goal": goal, "stages": sk.stage_dicts()}).data
    by_task = {n["task"]: n for n in data["nodes"]}
    first, second = (
        by_task["Who developed the KaTeX to MathJax plugin"],
        by_task["what website does that developer list?"],
    )
    assert first["id"] in second["depends_on"] and second["stage"] == first["stage"]
    assert strategies.validate_plan(data, sk).problems == []
    goal = "Who developed the KaTeX plugin, and what website does Obsidian list?"  # no pointer: side by side
    data = _complete("decompose", {"goal": goal, "stages": sk.stage_dicts()}).data
    by_task = {n["task"]: n for n in data["nodes"]}
    assert (
        by_task["Who developed the KaTeX plugin"]["id"]
        not in by_task["what website does Obsidian list?"]["depends_on"]
    )


def test_a_clause_that_points_back_with_a_pronoun_is_searched_and_answered_with_its_antecedent() -> None:
    """ "..., and how do they differ?" searched alone finds notes that say "different"; it is about what the
    clause before it asked for. A step handed what the one before found keeps its own words."""
    goal = "Which plugins help me write math in Obsidian, and how do they differ?"
    inputs = {"task": "how do they differ?", "goal": goal, "api": "...", "hints": []}
    script = _complete("script", inputs).text
    queries = ast.literal_eval(re.search(r"^QUERIES = (.*)$", script, re.M).group(1))
    assert queries[0].startswith("Which plugins help me write math in Obsidian")
    assert not any("differ" in q for q in queries)
    handed = _complete("script", {**inputs, "findings": ["- gather: Quick Latex ..."]}).text
    assert ast.literal_eval(re.search(r"^QUERIES = (.*)$", handed, re.M).group(1)) == ["how do they differ?"]
    context = [
        {
            "path": "People/different-ai.md",
            "heading": None,
            "citation": "[[People/different-ai]]",
            "text": "Benjamin works on many different projects in different places.",
        },
        {
            "path": "Plugins/quick-latex.md",
            "heading": None,
            "citation": "[[Plugins/quick-latex]]",
            "text": "Quick Latex: speeds up writing math with auto fraction and matrix shortcuts.",
        },
    ]
    text = _complete("answer", {"task": "how do they differ?", "goal": goal, "context": context}).text
    assert "[[Plugins/quick-latex]]" in text and "different-ai" not in text


# --- synthesize -----------------------------------------------------------------------------------------


def test_synthesize_keeps_every_citation_under_task_headings() -> None:
    children = [
        {"node_id": "a", "task": "How hard should brew water be?",
         "answer": "- Very hard water mutes acidity. [[Water/Water chemistry#Too soft, too hard]]\n"
                   "- Soft water tastes hollow. [[Water/Water chemistry#Hardness]]", "citations": []},
        {"node_id": "b", "task": "How long should beans rest?",
         "answer": "- Rest 3–7 days for filter. [[Roasting/Resting beans#How long to rest]]",
         "citations": []},
        {"node_id": "c", "task": "Chess openings", "answer": f"{NOTHING_FOUND}: none.", "citations": []},
    ]  # fmt: skip
    inputs = {"goal": "Brew water and resting", "task": "How hard should water be and how long to rest?",
              "children": children}  # fmt: skip
    text = _complete("synthesize", inputs).text
    lead, *sections = text.split("\n\n### ")
    assert "[[" in lead and "###" not in lead and "\n" not in lead.strip()  # one paragraph
    assert "Rest 3–7 days for filter." in lead and NOTHING_FOUND not in lead
    assert [s.split("\n", 1)[0] for s in sections] == [c["task"] for c in children]
    for child in children:
        for c in extract_citations(child["answer"]):
            assert c.raw in text
    assert _complete("synthesize", inputs).text == text


def test_synthesize_with_no_findings_says_so() -> None:
    text = _complete(
        "synthesize", {"goal": "g", "children": [{"node_id": "a", "task": "t", "answer": ""}]}
    ).text
    assert text.startswith("None of the subtasks found passages")


# --- judge ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "supported"),
    [
        ("A DTR of 20–25 % is a common target [[Roasting/Development time#^dtr-rule]]", True),
        ("A DTR of 30 % is a common target", False),  # a number the source does not state
        ("Espresso machines need monthly descaling", False),
        ("", False),
    ],
)
def test_judge_by_term_overlap(claim: str, supported: bool) -> None:
    source = "A development time ratio (DTR) of 20–25 % is a common target for light to medium roasts."
    data = _complete("judge", {"claim": claim, "source_text": source, "citation": "[[X]]"}).data
    assert data["supported"] is supported and data["reason"]
    assert JUDGE_THRESHOLD == 0.6


def test_support_judges_each_claim_of_a_batch() -> None:
    source = "A development time ratio (DTR) of 20–25 % is a common target for light to medium roasts."
    claims = [
        {"id": 0, "claim": "A DTR of 20–25 % is a common target", "source": source},
        {"id": 1, "claim": "A DTR of 30 % is a common target", "source": source},
    ]
    data = _complete("support", {"claims": claims}).data
    assert [(v["id"], v["supported"]) for v in data["verdicts"]] == [(0, True), (1, False)]


def test_reconcile_keeps_every_side_with_its_citations() -> None:
    conflicts = [{"slot": "dtr (%)", "sides": [
        {"value": "20-25", "statement": "A DTR of 20–25 %.", "citations": ["[[Roasting/Development time]]"]},
        {"value": "15", "statement": "A DTR of 15 %.", "citations": ["[[Journal/Roast log]]"]},
    ]}]  # fmt: skip
    text = _complete("reconcile", {"conflicts": conflicts}).text
    assert "[[Roasting/Development time]]" in text and "[[Journal/Roast log]]" in text
    assert "20-25" in text and "15" in text and "not reconciled" in text


# --- script ---------------------------------------------------------------------------------------------


class _FakeObsidian:
    """The sandbox's obsidian API, answered directly from a VaultSet (as plain dicts)."""

    def __init__(self, vaults: VaultSet) -> None:
        self.v = vaults
        self.calls: list[str] = []

    def vaults(self) -> list[str]:
        return self.v.ids

    def search(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        self.calls.append(f"search:{query}")
        return [h.to_dict() for h in self.v.search(query, limit=limit)]

    def read_note(self, path: str, vault: str | None = None) -> dict[str, Any]:
        self.calls.append(f"read_note:{path}")
        return self.v.read_note(path, vault=vault).to_dict()


def test_script_template_retrieves_with_the_obsidian_api(demo: VaultSet) -> None:
    inputs = {"task": "How long should beans rest after roasting?", "api": "...", "hints": ["resting beans"]}
    script = _complete("script", inputs).text
    assert script == _complete("script", inputs).text
    ast.parse(script)
    assert "obsidian.search(" in script and "obsidian.read_note(" in script and "__result__" in script
    fake = _FakeObsidian(demo)
    scope: dict[str, Any] = {"obsidian": fake}
    exec(compile(script, "<offline-script>", "exec"), scope)
    result = scope["__result__"]
    assert set(result) == {"context", "citations", "queries", "signals", "confidence", "why"}
    assert result["context"] and 0.0 <= result["confidence"] <= 1.0
    assert result["queries"][0] == inputs["task"]
    assert any(c["path"] == "Roasting/Resting beans.md" for c in result["context"])
    cited = "\n".join(c["citation"] for c in result["context"])
    assert all(r.resolved for r in resolve_citations(extract_citations(cited), demo))


def test_script_runs_in_the_real_sandbox(demo_vault: Path) -> None:
    codemode = pytest.importorskip("engine.codemode")
    script = _complete("script", {"task": "What water hardness is best for brewing?", "hints": None}).text
    try:
        with codemode.Sandbox(demo_vault) as sandbox:
            result = sandbox.run(script).result
    except codemode.SandboxUnavailable as exc:  # pragma: no cover - depends on the host
        pytest.skip(f"sandbox unavailable here: {exc}")
    assert result["context"] and result["citations"]
    assert all(c["citation"].startswith("[[") for c in result["context"])


# --- repair ---------------------------------------------------------------------------------------------


def test_repair_reruns_the_original_purpose(demo: VaultSet) -> None:
    inputs = {
        "task": "What development time ratio is a common target?",
        "context": _context(demo, *DTR_CONTEXT),
    }
    original = _complete("answer", inputs).text
    repaired = _complete(
        "repair", {"purpose": "answer", "error": "empty answer", "previous": {"inputs": inputs}}
    )
    assert repaired.text == original
    sk = strategies.get("research")
    plan_inputs = {"goal": "Survey the literature on water", "stages": sk.stage_dicts(), "max_children": 5}
    fixed = _complete(
        "repair", {"purpose": "decompose", "error": "bad JSON", "previous": "{nodes:", "inputs": plan_inputs}
    )
    assert fixed.data == _complete("decompose", plan_inputs).data
    # without the original inputs: a safe fallback, never a crash
    assert _complete("repair", {"purpose": "decompose", "previous": "???"}).data == {
        "nodes": [],
        "waivers": [],
    }
    assert "cannot repair" in _complete("repair", {"purpose": "answer", "previous": None}).text


def test_same_output_in_fresh_processes_with_different_hash_seeds(demo_vault: Path, tmp_path: Path) -> None:
    code = (
        "import asyncio, json, sys\n"
        "from engine import strategies\n"
        "from engine.llm._base import LLMRequest, Tier\n"
        "from engine.llm.offline import OfflineProvider\n"
        "goal = 'What is first crack? How long should development last? Compare light and dark roasts'\n"
        "sk = strategies.get('analysis')\n"
        "p = OfflineProvider()\n"
        "plan = asyncio.run(p.complete(LLMRequest('decompose', Tier.ORCHESTRATOR, '', inputs={"
        "'goal': goal, 'stages': sk.stage_dicts(), 'max_children': 6})))\n"
        "ctx = json.loads(sys.argv[1])\n"
        "ans = asyncio.run(p.complete(LLMRequest('answer', Tier.WORKER, '', inputs={"
        "'task': 'How long should beans rest after roasting?', 'context': ctx})))\n"
        "print(json.dumps([plan.data, ans.text]))\n"
    )
    vaults = VaultSet([Vault(demo_vault, "demo")])
    try:
        ctx = json.dumps(_context(vaults, ("Roasting/Resting beans.md", None), *DTR_CONTEXT))
    finally:
        vaults.close()
    outputs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "SHAD_HOME": str(tmp_path / "home")}
        root = Path(__file__).resolve().parent.parent
        command = [sys.executable, "-c", code, ctx]
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=root, timeout=120, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1


# --- tables and section headings --------------------------------------------------------------------------


RELEASES = (
    "# Releases\n\nThe release history of the plugin.\n\n| date | breaking | version |\n| --- | --- | --- |\n"
    "| 2020-12-07 | 0 | 0.9.21 |\n| 2021-03-01 | 1 | 1.0.0 |\n"
)


def test_table_rows_stay_a_table_under_their_header() -> None:
    from engine.llm.offline import answer

    context = [{"text": RELEASES, "citation": "[[Plugin/Releases#Releases]]", "path": "Plugin/Releases.md"}]
    text = answer({"task": "When was version 0.9.21 released (date)?", "context": context})
    lines = text.splitlines()
    assert lines[:3] == [
        "| date | breaking | version | source |",
        "| --- | --- | --- | --- |",
        "| 2020-12-07 | 0 | 0.9.21 | [[Plugin/Releases#Releases]] |",
    ]
    assert not [line for line in lines if line.startswith("- |")]  # never a row as a bullet, nor the header


def test_a_table_clipped_cell_by_cell_is_quoted_as_its_row_under_its_header() -> None:
    from engine.llm.offline import answer

    cells = ["Quality", "Price", "Uses", "Cost per use", "Poor", "$5", "10", "$0.50"]
    cells += ["Good", "$10", "50", "$0.20", "Best", "$20", "200", "$0.10"]
    text = "How many times do you wear a pair of socks before they develop holes?\n\n" + "\n\n".join(cells)
    context = [{"text": text, "citation": "[[Clippings/Buy wisely#Cost per use]]"}]
    lines = answer({"task": "What is the cost per use of the best pair of socks?", "context": context}).split(
        "\n"
    )
    at = lines.index("| Quality | Price | Uses | Cost per use | source |")
    # the row that answers, under its header
    assert "| Best | $20 | 200 | $0.10 | [[Clippings/Buy wisely#Cost per use]] |" in lines[at + 2 : at + 5]


def test_a_how_to_question_quotes_the_whole_procedure_once() -> None:
    from engine.llm.offline import answer

    text = (
        "# Releasing with GitHub actions\nThis was posted on the forum about GitHub actions releases.\n\n"
        "1. Write code and commit it.\n2. When ready to release a new version,\n"
        "   1. Update the `manifest.json`.\n   2. use `git tag <version number>`\n"
        "3. Push the new tag to GitHub `git push origin --tags`\n"
    )
    context = [{"text": text, "citation": "[[Guides/Releases]]"}]
    lines = answer({"task": "How do I use GitHub actions to release my plugin?", "context": context}).split(
        "\n"
    )
    steps = [line for line in lines if "1. Write code" in line]
    assert len(steps) == 1 and steps[0].endswith("[[Guides/Releases]]")
    assert "– use `git tag <version number>`" in steps[0] and "3. Push the new tag" in steps[0]
    assert not [line for line in lines if line.startswith("- Push the new tag")]  # not quoted twice
    # a question that is no "how do I" quotes the step alone
    lines = answer({"task": "Which command pushes the new tag to GitHub?", "context": context}).split("\n")
    assert not [line for line in lines if "1. Write code" in line]


def test_a_how_to_question_gets_the_procedure_even_after_an_instruction() -> None:
    from engine.llm.offline import answer

    def note(name: str, text: str) -> dict[str, str]:
        return {"text": text, "citation": f"[[{name}]]", "path": f"{name}.md"}

    context = [
        note("Journal/First roast", "My first home roast of coffee with a popcorn popper at home.\n"),
        note(
            "Roasting/Popper roasting",
            "# Popper roasting\nA popcorn popper is the cheapest way to roast coffee at home.\n"
            "## Choosing a popper\n- Use a popcorn popper with side vents to roast coffee.\n"
            "## Method\n1. Work outdoors.\n2. Preheat for 30 seconds, then add 80 g of green beans.\n"
            "3. Dump into a colander and cool.\n",
        ),
        note("Home", "Popcorn popper roasting of coffee at home: where I started.\n"),
        note("Equipment/Roasters", "Home coffee roasters: a popcorn popper, a drum, a fluid bed.\n"),
        note("Roasting/Stages", "At home, coffee roasting in a popcorn popper goes fast.\n"),
        note("Roasting/Safety", "Roasting coffee at home in a popcorn popper can start a fire.\n"),
    ]
    task = "How do I roast coffee at home with a popcorn popper?"
    lines = answer({"task": task, "context": context}).split("\n")
    # the instruction ("Use a popper with side vents") is no procedure: the numbered steps are quoted
    assert any(line.startswith("- 1. Work outdoors. 2. Preheat for 30 seconds") for line in lines), lines


def test_section_headings_are_the_subtasks_own_words() -> None:
    from engine.llm.offline import synthesize

    goal = "Compare light and dark roasts, and explain how resting time changes the cup."
    children = [
        {
            "node_id": "clarify_scope",
            "task": f"Define the key terms and scope of: {goal}",
            "answer": "- a [[A]]",
        },
        {"node_id": "gather_sources", "task": goal, "answer": "- b [[B]]"},
        {"node_id": "ask1", "task": "explain how resting time changes the cup.", "answer": "- c [[C]]"},
    ]
    text = synthesize({"goal": goal, "task": goal, "children": children})
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    assert headings == [
        "### Define the key terms and scope",
        "### Gather sources",
        "### Explain how resting time changes the cup.",
    ]


def test_a_list_of_links_under_a_heading_that_names_them_is_the_answer() -> None:
    text = (
        "Plates that can shift.\n# Plates\n- [[North American Plate]]\n- [[Antarctic Plate]]\n"
        "# Plate Boundaries\n- [[Sea Floor Spreading|Divergent Margin]]\n- [[Transform Margins]]\n"
        "# See also\n- [[Mantle]]\n"
    )
    context = [{"text": text, "citation": "[[Geography/Tectonic Plate#Plate Boundaries]]"}]
    answer = _complete("answer", {"task": "Which plate boundaries are listed?", "context": context}).text
    quoted = [q for q, _ in _lines(answer)]
    assert quoted[0] == "Divergent Margin; Transform Margins"  # the list headed by the kind asked, whole
    assert "Mantle" not in quoted and "Antarctic Plate" not in quoted  # "Plates" is not "plate boundaries"
    assert passages(text) == ["Plates that can shift."]  # quoted alone, link lists still say nothing


def test_list_every_thing_of_a_kind_quotes_the_whole_list_of_that_kind() -> None:
    """ "List every plugin made by pjeby" had quoted three of the five plugins his note lists."""
    text = (
        "# PJ Eby\n- GitHub: pjeby\n## Author of\n### Plugins\n- [[tag-wrangler|Tag Wrangler]]\n"
        "- [[note-folder-autorename|Note Folder Autorename]]\n- [[pane-relief|Pane Relief]]\n"
        "- [[hotkey-helper|Hotkey Helper]]\n- [[quick-explorer|Quick Explorer]]\n"
        "### Theme judges\n- Stephan Ango, author of the Minimal theme\n- SlRvb, author of the ITS Theme\n"
    )
    context = [{"text": text, "citation": "[[People/pjeby]]"}]
    for task in ("List every plugin made by pjeby", "Which plugins has pjeby released?"):
        quoted = [q for q, _ in _lines(_complete("answer", {"task": task, "context": context}).text)]
        assert "Tag Wrangler; Note Folder Autorename; Pane Relief; Hotkey Helper; Quick Explorer" in quoted
    # a list under a heading that is more than the kind asked ("Theme judges") is quoted item by item
    task = "Which themes has pjeby judged?"
    quoted = [q for q, _ in _lines(_complete("answer", {"task": task, "context": context}).text)]
    assert not any(";" in q for q in quoted)


def test_what_kind_of_thing_is_asked_for_is_answered_by_the_section_of_that_kind() -> None:
    """ "What theme did that developer make?": the link under "### Themes" is quoted, though a plugin whose
    own name says "theme" ranks above it (hub-014's person note)."""
    text = (
        "- GitHub: [chrisgrieser](https://github.com/chrisgrieser/)\n- Discord: `@pseudometa#9546`\n"
        "In my day job, I am a sociologist studying the social mechanisms underlying the digital economy. "
        "For my PhD project, I investigate the governance of the app economy. If you are interested in this "
        "subject, feel free to get in touch.\n## Author of\n### Plugins\n"
        "- [[obsidian-theme-design-utilities|Theme Design Utilities]]\n"
        "- [[obsidian-divide-and-conquer|Divide & Conquer]]\n### Themes\n- [[Shimmering Focus]]\n"
    )
    goal = "The Divide & Conquer plugin's developer is a sociologist. What theme did that developer make?"
    plugin = (
        "Plugin ID: `obsidian-divide-and-conquer`\nDeveloped by: [[chrisgrieser]]\n"
        "Mobile compatible: [[Desktop-only plugins|No]]\n\nBisect your plugins to find the slow one.\n"
    )
    context = [
        {"text": plugin, "citation": "[[Plugins/obsidian-divide-and-conquer#Divide & Conquer]]"},
        {"text": text, "citation": "[[People/chrisgrieser#pseudometa]]"},
    ]
    answer = _complete("answer", {"task": goal, "context": context}).text
    assert "Shimmering Focus" in [q for q, _ in _lines(answer)]
    ranked = rank_passages(goal, [("pseudometa People/chrisgrieser.md", text)])
    assert [p.gives for p in ranked if p.text == "Shimmering Focus"] == [("listed",)]
    assert wanted_answers("Which plugins has that person released?") == {"listed"}
    assert "listed" not in wanted_answers("What does the vault say about it?")  # no kind of thing named
    assert "listed" not in wanted_answers("What kind of grinder suits it?")


def test_the_kind_asked_for_may_follow_a_word_that_narrows_it() -> None:
    """ "Which Obsidian theme is ...?": the kind is "theme", not "Obsidian"; the link under "### Themes"
    gives what is asked."""
    text = "- GitHub: sspaeti\n## Author of\n### Themes\n- [[Kanagawa]]\n"
    for goal in (
        "Which Obsidian theme is listed as made by sspaeti?",
        "Which theme is listed as made by sspaeti?",
    ):
        ranked = rank_passages(goal, [("sspaeti People/sspaeti.md", text)])
        assert [p.gives for p in ranked if p.text == "Kanagawa"] == [("listed",)], goal
    ranked = rank_passages("Which Obsidian plugin is listed as made by sspaeti?", [("sspaeti", text)])
    assert [p.gives for p in ranked if p.text == "Kanagawa"] in ([], [()])  # a plugin is not a theme


def test_a_link_label_or_bold_line_made_of_the_questions_words_is_not_quoted() -> None:
    """A link's label or a bold line standing as a heading, every word of which the question holds, only
    repeats it; a property made of the question's words may answer it ("Mobile compatible: No"), and a
    label with a word of its own names something ("Kanagawa")."""
    goal = "Compare security and privacy in Obsidian Sync versus Obsidian Publish"
    text = (
        "## How to use Obsidian Publish\n- [[Security and privacy]]\n- [[Kanagawa]]\n\n"
        "**Security and privacy**\n\nObsidian Publish does not collect visitor data or store cookies.\n"
    )
    quoted = [p.text for p in rank_passages(goal, [("Publish", text)])]
    assert "Security and privacy" not in quoted and "**Security and privacy**" not in quoted
    assert "Kanagawa" in quoted
    assert "Obsidian Publish does not collect visitor data or store cookies." in quoted
    plugin = "Plugin ID: `latex-ocr`\nMobile compatible: No\n"
    quoted = [p.text for p in rank_passages("Is the Latex OCR plugin mobile compatible?", [("", plugin)])]
    assert "Mobile compatible: No" in quoted


def test_compare_says_what_to_do_not_what_a_passage_holds() -> None:
    """ "Compare A versus B" asks about A and B: a passage that only says "comparing" is no answer, as
    the goal's own words or as the stage's."""
    goal = "Compare Obsidian Sync versus Obsidian Publish"
    text = "The app is comparing the local files with the remote ones.\nPublish hosts your notes as a site.\n"
    for extra in ("", goal):
        quoted = [p.text for p in rank_passages(goal, [("", text)], extra=extra)]
        assert quoted == ["Publish hosts your notes as a site."], extra
    # a question whose content is a comparison asks what the vault compares
    asked = "What is the local file compared to?"
    assert "The app is comparing the local files with the remote ones." in [
        p.text for p in rank_passages(asked, [("", text)])
    ]


def test_a_question_word_the_best_passages_lack_gets_its_own_passage() -> None:
    """Two-step questions: the passages that rank first for the whole question cover its first step;
    the best passage holding a word they all lack (the second step) is quoted too."""
    context = [
        {
            "text": "\n".join(
                f"- The Divide and Conquer plugin {n}.{i} is developed by alice." for i in range(3)
            ),
            "citation": f"[[Plugins/Divide and Conquer {n}]]",
        }
        for n in range(3)
    ]
    context.append({"text": "## Themes\n- [[Shimmering Focus]]\n", "citation": "[[People/alice]]"})
    task = "The Divide and Conquer plugin's developer: which theme did that developer make?"
    answer = _complete("answer", {"task": task, "context": context}).text
    lines = _lines(answer)
    assert ("Shimmering Focus", "[[People/alice]]") in lines
    assert len(lines) <= MAX_PASSAGES + 2


def test_a_why_question_gets_a_passage_that_gives_the_cause() -> None:
    """ "How long ..., and why?" asks for a duration and a cause: passages stating durations rank first;
    the best one under a "Why ..." heading (or saying "because") is quoted too."""
    context = [
        {
            "text": "## How long to rest\n"
            + "\n".join(f"- Rest beans {d} days after roasting for {way}." for d in (3, 5, 7)),
            "citation": f"[[Roasting/Resting for {way}#How long]]",
        }
        for way in ("espresso shots", "filter pour-over", "cold brew batches")
    ]
    context.append(
        {
            "text": "## Why beans degas\nRoasting leaves carbon dioxide trapped inside the beans.\n",
            "citation": "[[Roasting/Resting beans#Why beans degas]]",
        }
    )
    task = "How long should I rest beans after roasting, and why?"
    lines = _lines(_complete("answer", {"task": task, "context": context}).text)
    cause = (
        "Roasting leaves carbon dioxide trapped inside the beans.",
        "[[Roasting/Resting beans#Why beans degas]]",
    )
    assert cause in lines and len(lines) <= MAX_PASSAGES + 3
    # Asked only how long, the cause is not forced in.
    lines = _lines(
        _complete("answer", {"task": "How long should I rest beans after roasting?", "context": context}).text
    )
    assert cause not in lines


def test_a_where_question_ranks_the_passage_that_says_where_first() -> None:
    """ "Where does a column's total show up?" asks for a place: of two lines that hold as many of the
    question's words, the one that says where ("displayed at the top of the group") goes first."""
    text = (
        "A summary computes the total of a column.\n\n"
        "When rows are grouped, each group's summary is displayed at the top of the group.\n"
    )
    query = "When rows are grouped, where does a column's total show up?"
    ranked = rank_passages(query, [("Bases/Table view.md", text)])
    assert ranked[0].text.startswith("When rows are grouped") and ranked[0].gives == ("place",)
    assert wanted_answers("Where do we go to report a bug?") == {"place"}
    assert "place" not in wanted_answers("When choosing where to host a service, how is uptime measured?")


def test_a_property_line_is_about_what_the_other_properties_say_the_note_is() -> None:
    """ "coordinates: ..." of a note whose type is "Parks, Shrines" is a shrine park's coordinates: the
    note's properties describe it as its name does, so the line is quoted for "the shrine park's
    coordinates" although it holds no other word of the question."""
    shrine = "categories: Places\ntype: Parks, Shrines\nloc: Kyoto\ncoordinates: 34.9689499, 135.7692576"
    city = "categories: Places\ntype: Cities\nloc: Japan\ncoordinates: 35.021041, 135.7556075"
    context = [
        {"text": city, "citation": "[[References/Kyoto]]"},
        {"text": shrine, "citation": "[[References/Fushimi Inari]]"},
    ]
    task = "What are the coordinates of the shrine park in that city?"
    lines = _lines(_complete("answer", {"task": task, "context": context}).text)
    # Quoted with the note's name: two notes' properties are two things, not two answers to compare.
    assert ("Fushimi Inari — coordinates: 34.9689499, 135.7692576", "[[References/Fushimi Inari]]") in lines[
        :2
    ]
    assert ("Kyoto — coordinates: 35.021041, 135.7556075", "[[References/Kyoto]]") not in lines[:2]
    # A note's text below its properties is not a property: "Note: ..." there names nothing.
    ranked = rank_passages(
        task, [("Places/Kyoto", "Intro line.\nNote: shrine park nearby.\ncoordinates: 1, 2")]
    )
    assert [p.text for p in ranked][:1] == ["Note: shrine park nearby."]


def test_what_something_is_made_of_is_answered_by_the_list_of_its_parts() -> None:
    """ "What is an AI agent made up of?" wants the note's list of parts, not a sentence that happens to
    say "made"."""
    assert "parts" in wanted_answers("What is an AI agent made up of?")
    assert "parts" in wanted_answers("Which components does a CPU consist of?")
    assert "parts" not in wanted_answers("Who made the AI agent?")
    items = [
        ("Security/Trust and AI", "We need public AI models, made by academia and run by individuals."),
        ("Machine Learning/AI Agent", "A collection of:\n- AI Model\n- Reasoning loop\n- Tools\n"),
    ]
    ranked = rank_passages("What is an AI agent made up of?", items)
    assert ranked[0].text == "A collection of: AI Model; Reasoning loop; Tools"
    assert "parts" in ranked[0].gives


def test_a_strategy_stage_answers_its_goal_not_the_stage_wording() -> None:
    """ "Frame the question and the criteria for answering: <goal>": "frame" and "criteria" say what to do
    with the passages; a passage about Obsidian's window frame is no answer."""
    goal = "Compare security and privacy in Obsidian Sync versus Obsidian Publish"
    context = [
        {"text": "**Obsidian frame** — Uses Obsidian's custom window frame.", "citation": "[[Set#Frame]]"},
        {"text": "Obsidian Sync encrypts your remote vault end to end.", "citation": "[[Sync/Security]]"},
        {"text": "Obsidian Publish does not collect visitor data.", "citation": "[[Publish/Privacy]]"},
    ]
    task = f"Frame the question and the criteria for answering: {goal}"
    cited = [c for _, c in _lines(_complete("answer", {"task": task, "goal": goal, "context": context}).text)]
    assert "[[Set#Frame]]" not in cited and "[[Sync/Security]]" in cited


def test_a_question_that_names_its_subject_is_answered_from_the_notes_linked_with_it() -> None:
    # The other plugin's note shares more of the question's words; it is not Artel250's.
    context = [
        {
            "path": "People/Artel250.md",
            "text": "# Artel250\n### Plugins\n- [[chat-with-bard|Chat with Bard]]",
            "citation": "[[People/Artel250]]",
        },
        {
            "path": "Plugins/ai-assistant.md",
            "text": "Developed by: [[qgrail]]\n\nAn AI assistant plugin to chat with ChatGPT on mobile.",
            "citation": "[[Plugins/ai-assistant]]",
        },
        {
            "path": "Plugins/chat-with-bard.md",
            "text": "Plugin ID: `chat-with-bard`\nDeveloped by: [[Artel250]]\n\nChat with the Google Bard "
            "Assistant directly from Obsidian.",
            "citation": "[[Plugins/chat-with-bard]]",
        },
    ]
    task = "The GitHub user Artel250 has one plugin. Which AI assistant does it let you chat with on mobile?"
    lines = _lines(_complete("answer", {"task": task, "context": context}).text)
    subject = [line for line in lines if line[1] != "[[Plugins/ai-assistant]]"]
    assert lines[: len(subject)] == subject  # the subject's lines first
    assert (
        "Chat with the Google Bard Assistant directly from Obsidian.",
        "[[Plugins/chat-with-bard]]",
    ) in lines
    # a short name inside another line ("Plugin ID: chat-with-bard") is no repetition of it
    assert ("Chat with Bard", "[[People/Artel250]]") in lines


def test_the_lead_keeps_a_wikilink_inside_a_code_span_as_written() -> None:
    from engine.llm.offline import synthesize

    goal = "How do I embed a block?"
    example = "You can also embed specific headings and blocks. `![[Internal links#^b15695]]`"
    children = [{"node_id": "ask1", "task": goal, "answer": f"- {example} [[Linking/Embed files#Embed]]"}]
    lead = synthesize({"goal": goal, "task": goal, "children": children}).split("\n\n")[0]
    assert lead == f"{example} [[Linking/Embed files#Embed]]"
    # the link shown as syntax is no source of the lead
    assert [c.path for c in extract_citations(lead)] == ["Linking/Embed files"]
