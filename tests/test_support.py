"""Support checks (E9): claims are read from answers, checked against the passages they cite, and the
unsupported ones are flagged."""

from __future__ import annotations

from pathlib import Path

import pytest
from _demo import write_vault

from engine import VaultSet
from engine.retrieval.coverage import CoverEvidence, goal_asks, uncovered_asks
from engine.retrieval.support import (
    UNSUPPORTED_MARK,
    Claim,
    check_lexically,
    claims_of,
    flag_unsupported,
    judge_items,
    lexical_check,
    parse_verdicts,
    span_texts,
)

pytestmark = pytest.mark.usefixtures("shad_home")


def test_claims_are_cited_statements_and_code_is_not_a_citation() -> None:
    answer = (
        "# Title\n"
        "- To embed a note: `![[Internal links]]` [[Linking/Embed files#Embed a note]]\n"
        "Rest beans 3 days. [[Roasting/Resting]] Grind coarse. [[Brewing/Grind]]\n"
        "An uncited line stays out.\n"
        "```md\n![[Inside a fence]] [[Not/A claim]]\n```\n"
        "First sentence without a link. Second one with it. [[A/B#H]]\n"
    )
    claims = claims_of(answer)
    assert [(c.text, c.citations, c.line) for c in claims] == [
        ("To embed a note: `![[Internal links]]`", ["[[Linking/Embed files#Embed a note]]"], 1),
        ("Rest beans 3 days.", ["[[Roasting/Resting]]"], 2),
        ("Grind coarse.", ["[[Brewing/Grind]]"], 2),
        ("First sentence without a link.", ["[[A/B#H]]"], 7),  # takes the next citation on its line
        ("Second one with it.", ["[[A/B#H]]"], 7),
    ]


@pytest.mark.parametrize(
    ("claim", "ok"),
    [
        ("Rest roasted beans for 3 to 7 days before brewing.", True),
        ("Rest roasted beans for 14 days before brewing.", False),  # a number the passage does not state
        ("The vault says so.", False),  # words the passage does not hold
        ("Beans", True),  # nothing to contradict: one word, and it is there
    ],
)
def test_lexical_check_needs_the_words_and_every_number(claim: str, ok: bool) -> None:
    span = "Freshly roasted beans need to rest: 3 to 7 days for filter, longer for espresso, before brewing."
    supported, why = lexical_check(claim, span, "Roasting/Resting beans.md Rest")
    assert supported is ok, why


def test_lexical_check_of_an_unreadable_passage_fails() -> None:
    assert lexical_check("Rest beans 3 days.", "")[0] is False


def _indexed(tmp_path: Path, files: dict[str, str | bytes]) -> VaultSet:
    vaults = VaultSet([str(write_vault(tmp_path / "v", files))])
    vaults.refresh()
    return vaults


def test_spans_come_from_the_context_then_from_the_vault(tmp_path: Path) -> None:
    vaults = _indexed(
        tmp_path,
        {
            "Roasting/Resting.md": (
                "# Resting\n\nIntro.\n\n## Filter\n\nRest 3 days.\n\n## Espresso\n\nRest 7 days.\n"
            ),
            "Notes/Blocks.md": "Some text.\n\nA line with a block id. ^abc\n\nAfter.\n",
        },
    )
    context = [
        {"citation": "[[X/Given]]", "text": "From the context.", "path": "X/Given.md", "heading": None}
    ]
    spans = span_texts(
        ["[[X/Given]]", "[[Roasting/Resting#Espresso]]", "[[Notes/Blocks#^abc]]", "[[Missing/Note]]"],
        context,
        vaults,
    )
    assert spans["[[X/Given]]"][0] == "From the context."
    assert "Rest 7 days." in spans["[[Roasting/Resting#Espresso]]"][0]
    assert "Rest 3 days." not in spans["[[Roasting/Resting#Espresso]]"][0]
    assert spans["[[Notes/Blocks#^abc]]"][0].startswith("A line with a block id.")
    assert spans["[[Missing/Note]]"][0] == ""
    verdicts = check_lexically(
        [Claim("Rest espresso beans 7 days.", ["[[Missing/Note]]", "[[Roasting/Resting#Espresso]]"], 0)],
        spans,
    )
    assert verdicts[0].supported  # one citation that supports it is enough


def test_a_cited_notes_aliases_name_what_its_passage_is_about(tmp_path: Path) -> None:
    """A section of the note aliased "DVI" is about DVI: the alias joins its label, so the ask "the
    bandwidth of a dual-link DVI connection" is covered by "7.4 Gbps" cited from it."""
    vaults = _indexed(
        tmp_path,
        {
            "IT/Digital Visual Interface.md": (
                "---\naliases:\n  - DVI\n---\n# Connector Type\n### Dual-Link\n- 7.4 Gbps\n- 85 fps\n"
            ),
            "IT/Plain.md": "---\naliases: \n---\n# Plain\n\nNo names.\n",
        },
    )
    vault = vaults.ids[0]
    cite = "[[IT/Digital Visual Interface#Dual-Link]]"
    context = [{"citation": cite, "text": "- 7.4 Gbps", "path": "IT/Digital Visual Interface.md",
                "heading": "Dual-Link", "vault": vault}]  # fmt: skip
    spans = span_texts([cite, "[[IT/Plain]]"], context, vaults)
    vaults.close()
    assert spans[cite][1].split() == ["IT/Digital", "Visual", "Interface.md", "Dual-Link", "DVI"]
    assert spans["[[IT/Plain]]"][1].split() == ["IT/Plain.md"]  # an empty alias adds nothing
    ask = goal_asks("What is the bandwidth of a dual-link DVI connection?")
    evidence = [CoverEvidence("7.4 Gbps", spans[cite][1], spans[cite][0])]
    assert uncovered_asks(ask, evidence) == []
    no_alias = [CoverEvidence("7.4 Gbps", "IT/Digital Visual Interface.md Dual-Link", spans[cite][0])]
    assert uncovered_asks(ask, no_alias) == ask


def test_flagging_marks_each_unsupported_claim_once() -> None:
    answer = "- Rest 3 days. [[A/B]]\n- Grind fine. [[C/D]] Brew hot. [[E/F]]"
    claims = claims_of(answer)
    spans = {
        "[[A/B]]": ("Rest 3 days.", ""),
        "[[C/D]]": ("Grind coarse for a press.", ""),
        "[[E/F]]": ("", ""),
    }
    verdicts = check_lexically(claims, spans)
    assert [v.supported for v in verdicts] == [True, False, False]
    flagged = flag_unsupported(answer, verdicts)
    mark = UNSUPPORTED_MARK
    assert flagged == f"- Rest 3 days. [[A/B]]\n- Grind fine. [[C/D]] {mark} Brew hot. [[E/F]] {mark}"
    assert flag_unsupported(flagged, verdicts) == flagged


def test_judge_items_and_replies() -> None:
    claims = [Claim("Rest 3 days.", ["[[A/B]]"], 0), Claim("Grind fine.", ["[[C/D]]"], 1)]
    items = judge_items(claims, {"[[A/B]]": ("Rest 3 days.", "A/B.md")})
    assert items == [
        {"id": 0, "claim": "Rest 3 days.", "citation": "[[A/B]]", "source": "Rest 3 days."},
        {"id": 1, "claim": "Grind fine.", "citation": "[[C/D]]", "source": ""},
    ]
    reply = {"verdicts": [{"id": 0, "supported": True, "reason": "says so"}, {"id": 1, "supported": "yes"},
                          {"id": 7, "supported": False}, "junk"]}  # fmt: skip
    assert parse_verdicts(reply, 2) == {0: (True, "says so")}
    assert parse_verdicts([{"id": 1, "supported": False}], 2) == {1: (False, "")}
    assert parse_verdicts("prose", 2) == {}
