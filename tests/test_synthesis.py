"""Synthesis helpers (E8): conflicting children are detected and both sides kept with attribution."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from engine.retrieval.synthesis import (
    Conflict,
    detect_conflicts,
    drop_repeated_bullets,
    render_conflicts,
    source_of,
)

pytestmark = pytest.mark.usefixtures("shad_home")


def child(node_id: str, task: str, answer: str, citations: list[Any] | None = None) -> dict[str, Any]:
    return {"node_id": node_id, "task": task, "answer": answer, "citations": citations or []}


def by_slot(conflicts: list[Conflict]) -> dict[str, Conflict]:
    return {c.slot: c for c in conflicts}


def test_numbers_with_different_values_conflict() -> None:
    children = [
        child("filter", "What DTR suits filter roasts?",
              "- A DTR of 20–25 % is a common target. [[Roasting/Development time#^dtr-rule]]"),
        child("espresso", "What DTR suits espresso?",
              "A DTR of 15 % works for my espresso. [[Journal/2026-03-14 Roast log]]"),
    ]  # fmt: skip
    conflicts = detect_conflicts(children)
    assert list(by_slot(conflicts)) == ["dtr (%)"]
    (c,) = conflicts
    assert c.kind == "number"
    assert [(s.node_id, s.value) for s in c.sides] == [("filter", "20-25"), ("espresso", "15")]
    assert c.sides[0].citations == ["[[Roasting/Development time#^dtr-rule]]"]
    assert c.sides[1].statement == "A DTR of 15 % works for my espresso."


def test_key_value_slots_conflict() -> None:
    children = [
        child("a", "Brew ratio for pour-over", "- Brew ratio: 1:16 [[Reference/Brew ratios]]"),
        child("b", "Brew ratio for French press", "**Brew ratio**: 1:12 [[Brewing/French press]]"),
    ]
    (c,) = detect_conflicts(children)
    assert (c.slot, c.kind) == ("brew ratio", "key_value")
    assert {s.value for s in c.sides} == {"1:16", "1:12"}


def test_properties_of_notes_the_task_does_not_name_are_not_one_thing() -> None:
    """ "What website does that developer list?" found several developers' notes: each "Website:" line is
    its own note's, not a disagreement. Numbers from such notes still conflict (the same quantity)."""
    children = [
        child(
            "a", "What website does that developer list?", "Website: https://a.dev [[People/Developer-Mike]]"
        ),
        child(
            "b", "What website does that developer list?", "Website: https://b.dev [[People/db-developer]]"
        ),
    ]
    assert detect_conflicts(children) == []
    children += [
        child("c", "Rest beans", "Rest beans 3 days. [[A/B]]"),
        child("d", "Rest", "Rest beans 7 days. [[C/D]]"),
    ]
    assert [c.kind for c in detect_conflicts(children)] == ["number"]
    task = "Is the Latex OCR plugin mobile compatible?"
    ids = [  # two notes the task names, each with its own ID: what each note is, not two answers
        child("e", task, "Plugin ID: `latex-ocr` [[Plugins/latex-ocr]]"),
        child("f", task, "Plugin ID: `latexocr` [[Plugins/latexocr#LaTeX-OCR]]"),
    ]
    assert detect_conflicts(ids) == []
    ids = [
        child("e", task, "Plugin ID: `latex-ocr-plus` [[Plugins/latex-ocr]]"),
        child("f", task, "Plugin ID: `ocr-tools` [[Plugins/latexocr#LaTeX-OCR]]"),
    ]
    assert len(detect_conflicts(ids)) == 1  # IDs that are not their notes' names are compared


def test_agreement_and_unrelated_facts_are_not_conflicts() -> None:
    children = [
        child("a", "t1", "Water at 94 °C is ideal. [[Brewing/Pour-over]]\nDTR of 20.0 % here. [[X/Y]]"),
        child("b", "t2", "Use water at 94°C for pour-over. [[Brewing/Pour-over]]\nA DTR of 20 % [[X/Z]]"),
        child("c", "t3", "Grind 18 g of coffee. [[Brewing/Espresso]]\nRoasted in 2024 [[J/1]]"),
        child("d", "t4", "Note: something\nExample: 1 thing\nSee: the other note"),
    ]
    assert detect_conflicts(children) == []


def test_one_source_never_conflicts_with_itself() -> None:
    # One note, cited under two headings, and its sync-conflict copies: one source, whatever it says.
    text = (
        "- A DTR of 20 % is typical. [[Roasting/Development time#Filter]]\n"
        "- A DTR of 25 % for espresso. [[Roasting/Development time#Espresso]]\n"
        "- A DTR of 30 % here. [[Roasting/Development time (conflict 2026-04-02)]]\n"
        "- A DTR of 35 % there. [[Roasting/Development time.sync-conflict-20260402-101010-ABCDEFG]]"
    )
    assert detect_conflicts([child("a", "t", text)]) == []
    assert source_of("[[Roasting/Development time (conflict 2026-04-02)#H|x]]") == "roasting/development time"


def test_two_notes_in_one_subtask_can_conflict() -> None:
    text = "- A DTR of 20 % is typical. [[A/B]]\n- A DTR of 25 % is typical. [[A/C]]"
    (c,) = detect_conflicts([child("a", "t", text)])
    assert [(s.value, s.citations, s.source) for s in c.sides] == [
        ("20", ["[[A/B]]"], "a/b"),
        ("25", ["[[A/C]]"], "a/c"),
    ]


def test_copied_text_is_one_source_not_agreement_or_conflict() -> None:
    children = [
        child("a", "t1", "Rest beans 3 days. [[Roasting/Resting]]"),
        child("b", "t2", "Rest beans 3 days. [[Archive/Resting copy]]"),  # the same words, copied
        child("c", "t3", "Rest beans 7 days. [[Journal/Log]]"),
    ]
    (c,) = detect_conflicts(children)
    assert [s.citations[0] for s in c.sides] == ["[[Roasting/Resting]]", "[[Journal/Log]]"]
    assert detect_conflicts(children[:2]) == []


def test_repeated_bullets_are_dropped_across_sections() -> None:
    text = (
        "Lead sentence. [[A/B]]\n\n### First\n\n- Rest beans 3 days. [[A/B]]\n- Grind coarse. [[C/D]]\n\n"
        "### Second\n\n- Rest beans 3 days! [[A/B#Other]]\n- Something new here. [[E/F]]\n\n"
        "### Third\n\n- Grind   coarse. [[C/D]]\n"
    )
    out, dropped = drop_repeated_bullets(text)
    assert dropped == 2
    assert out.count("Rest beans 3 days") == 1 and out.count("Grind") == 1
    assert "- Something new here. [[E/F]]" in out
    assert out.rstrip().endswith("### Third\n\n_Its passages are quoted in the other sections._")
    assert drop_repeated_bullets(out) == (out, 0)


def test_citation_attribution_per_sentence() -> None:
    children = [
        child(
            "a",
            "t1",
            "A DTR of 20 % is right. [[Roasting/Development time]] Rest 3 days first. [[Roasting/Resting]]",
        ),
        child("b", "t2", "Rest 7 days first. A DTR of 25 % is right. [[Roasting/Troubleshooting]]"),
    ]
    slots = by_slot(detect_conflicts(children))
    assert set(slots) == {"dtr (%)", "rest (days)"}
    a_rest = next(s for s in slots["rest (days)"].sides if s.node_id == "a")
    assert a_rest.citations == ["[[Roasting/Resting]]"]
    b_rest = next(s for s in slots["rest (days)"].sides if s.node_id == "b")
    assert b_rest.citations == ["[[Roasting/Troubleshooting]]"]  # the next citation on its line


def test_child_citations_used_when_a_statement_has_none() -> None:
    cites = [{"vault": "demo", "path": "Reference/Brew ratios.md", "heading": "Filter", "resolved": True}]
    children = [
        child("a", "Brew ratios for filter", "Brew ratio: 1:16", cites),
        child("b", "Pour-over brew ratio", "Brew ratio: 1:15", ["[[Brewing/Pour-over]]"]),
    ]
    (c,) = detect_conflicts(children)
    assert c.sides[0].citations == ["[[Reference/Brew ratios#Filter]]"]
    assert c.sides[1].citations == ["[[Brewing/Pour-over]]"]


@dataclass
class _NodeLike:
    id: str
    task: str
    answer: str
    citations: list[Any] = field(default_factory=list)


def test_objects_and_garbage_are_accepted() -> None:
    children: list[Any] = [
        _NodeLike("n1", "t1", "Brew at 94 °C. [[A/B]]"),
        _NodeLike("n2", "t2", "Brew at 90 °C. [[A/C]]"),
        child("n3", "t3", ""),
        {"node_id": "n4"},
        {"answer": None},
    ]
    (c,) = detect_conflicts(children)
    assert [s.node_id for s in c.sides] == ["n1", "n2"]
    assert detect_conflicts([]) == []


def test_render_keeps_both_sides_with_attribution() -> None:
    children = [
        child(
            "filter",
            "What DTR suits filter roasts?",
            "A DTR of 20–25 % is a common target. [[Roasting/Development time#^dtr-rule]]",
        ),
        child(
            "espresso", "What DTR suits espresso?", "A DTR of 15 % works. [[Journal/2026-03-14 Roast log]]"
        ),
    ]
    conflicts = detect_conflicts(children)
    text = render_conflicts(conflicts)
    assert text.startswith("### Conflicting findings")
    for ch in children:
        assert ch["task"] in text and f"`{ch['node_id']}`" in text
    assert "[[Roasting/Development time#^dtr-rule]]" in text and "[[Journal/2026-03-14 Roast log]]" in text
    assert "20-25" in text and "15" in text
    assert render_conflicts([]) == ""
    assert json.loads(json.dumps([c.to_dict() for c in conflicts]))[0]["slot"] == "dtr (%)"


def test_a_section_heading_drops_the_goal_it_repeats() -> None:
    from engine.retrieval.synthesis import section_heading

    goal = "What is our OAuth authentication architecture for the payment API?"
    assert section_heading(f"Gather sources about {goal}", goal) == "Gather sources"
    assert (
        section_heading(f"Define the key terms and scope of: {goal}", goal)
        == "Define the key terms and scope"
    )
    assert section_heading(goal, goal, "clarify_scope") == "Clarify scope"  # only the goal: the node's name
    assert section_heading("list the payment endpoints", goal) == "List the payment endpoints"
    assert section_heading("", goal, "") == ""


def test_a_fact_about_a_note_the_task_does_not_name_is_no_side() -> None:
    # Plugin pages share a template: "Mobile compatible: Yes" on another plugin's page does not disagree
    # with the page the question names.
    answer = (
        "- Mobile compatible: No [[Plugins/latex-ocr#Latex OCR]]\n"
        "- Mobile compatible: Yes [[Plugins/handwriting-ocr#Handwriting OCR]]\n"
        "- A DTR of 20 % [[Roasting/Development time]]\n- A DTR of 25 % [[Journal/Roast log]]"
    )
    conflicts = detect_conflicts([child("root", "Is the Latex OCR plugin mobile compatible?", answer)])
    assert [c.slot for c in conflicts] == ["dtr (%)"]  # neither note named: both sides stand
    both = detect_conflicts([child("root", "Are Latex OCR and Handwriting OCR mobile compatible?", answer)])
    assert "mobile compatible" in [c.slot for c in both]


def test_a_clause_section_keeps_its_items_before_a_framing_section_above_it() -> None:
    text = (
        "### Frame the question\n\n- Developed by: pejakovic [[Plugins/katex]]\n"
        "- Plugin ID: katex [[Plugins/katex]]\n\n"
        "### Who developed the KaTeX plugin\n\n- Developed by: pejakovic [[Plugins/katex]]\n"
    )
    out, dropped = drop_repeated_bullets(text, {"Who developed the KaTeX plugin"})
    assert dropped == 1
    frame, clause = out.split("### Who developed the KaTeX plugin")
    assert "pejakovic" not in frame and "Plugin ID: katex" in frame
    assert "- Developed by: pejakovic [[Plugins/katex]]" in clause
    # without clause sections named, the first copy stays (as before)
    assert "pejakovic" in drop_repeated_bullets(text)[0].split("### Who")[0]


def test_a_note_the_task_names_in_part_is_about_something_else() -> None:
    """ "Simple Image Inserter" names simple-image-inserter.md; the heading "Image Inserter" of another
    plugin's note holds two of its words, and its "Mobile compatible: Yes" is that plugin's."""
    task = "Can I use the Simple Image Inserter plugin on Obsidian mobile?"
    answer = (
        "- Mobile compatible: No [[Plugins/simple-image-inserter]]\n"
        "- Mobile compatible: Yes [[Plugins/insert-unsplash-image#Image Inserter]]"
    )
    assert detect_conflicts([child("root", task, answer)]) == []
    # named as fully by both, the two notes do disagree
    both = (
        "- Mobile compatible: No [[Plugins/image-inserter]]\n"
        "- Mobile compatible: Yes [[Other/Image Inserter]]"
    )
    (c,) = detect_conflicts([child("root", task, both)])
    assert {s.value for s in c.sides} == {"no", "yes"}
