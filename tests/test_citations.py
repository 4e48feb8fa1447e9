"""Citations (E9): extraction from model output, resolution against real vaults, flagging, summaries."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.retrieval.citations import (
    UNRESOLVED_MARK,
    Citation,
    ResolvedCitation,
    extract_citations,
    flag_unresolved,
    make_citation,
    resolve_citations,
    summarize,
)
from engine.vault import Vault, VaultSet

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def demo(demo_vault: Path) -> Iterator[VaultSet]:
    vaults = VaultSet([Vault(demo_vault, "demo")])
    yield vaults
    vaults.close()


def _one(text: str, vaults: VaultSet) -> ResolvedCitation:
    found = resolve_citations(extract_citations(text), vaults)
    assert len(found) == 1
    return found[0]


# --- extraction ----------------------------------------------------------------------------------------


def test_extract_all_link_forms() -> None:
    text = (
        "Roast to [[Roasting/First crack]] then [[Roasting/First crack#What is happening|the crack]]; "
        "see [[vault2:Water/Water chemistry#Hardness]] and [[Roasting/Development time#^dtr-rule]] "
        "and [[Brewing/Espresso.md]]."
    )
    cites = extract_citations(text)
    assert cites == [
        Citation("[[Roasting/First crack]]", "Roasting/First crack"),
        Citation("[[Roasting/First crack#What is happening|the crack]]", "Roasting/First crack",
                 heading="What is happening", alias="the crack"),
        Citation("[[vault2:Water/Water chemistry#Hardness]]", "Water/Water chemistry", vault="vault2",
                 heading="Hardness"),
        Citation("[[Roasting/Development time#^dtr-rule]]", "Roasting/Development time", block="dtr-rule"),
        Citation("[[Brewing/Espresso.md]]", "Brewing/Espresso"),
    ]  # fmt: skip


def test_extract_skips_embeds_code_and_duplicates() -> None:
    text = (
        "![[Equipment/grinder-burrs.svg]] `[[In/Code]]`\n```\n[[In/Fence]]\n```\n"
        "[[A/B]] again [[A/B]] | table [[A/C\\|alias]]"
    )
    cites = extract_citations(text)
    assert [c.path for c in cites] == ["A/B", "A/C"]
    assert cites[1].alias == "alias"
    assert extract_citations("") == [] and extract_citations("no links [[ ]] here") == []


def test_make_citation_round_trips() -> None:
    assert make_citation("demo", "Roasting/First crack.md") == "[[Roasting/First crack]]"
    assert (
        make_citation("demo", "Water/Water chemistry.md", "Hardness") == "[[Water/Water chemistry#Hardness]]"
    )
    assert make_citation("demo", "Water/Water chemistry.md", "Hardness", multi_vault=True) == (
        "[[demo:Water/Water chemistry#Hardness]]"
    )
    assert make_citation("demo", "Roasting/Development time.md", block="^dtr-rule") == (
        "[[Roasting/Development time#^dtr-rule]]"
    )
    # characters a link cannot hold are removed from headings, so the link still parses
    link = make_citation("demo", "A/B.md", "Ratio [1|2] #x")
    (c,) = extract_citations(link)
    assert (c.path, c.heading, c.alias) == ("A/B", "Ratio 1 2 x", None)


# --- resolution against the demo vault -----------------------------------------------------------------


def test_note_link_resolves(demo: VaultSet) -> None:
    r = _one("[[Roasting/First crack]]", demo)
    assert (r.resolved, r.vault, r.path, r.reason) == (True, "demo", "Roasting/First crack.md", "")


def test_missing_heading_does_not_resolve(demo: VaultSet) -> None:
    r = _one("[[Roasting/First crack#No such heading]]", demo)
    assert not r.resolved
    assert r.reason.startswith("heading missing")
    assert r.path == "Roasting/First crack.md"


def test_heading_resolves(demo: VaultSet) -> None:
    r = _one("[[Water/Water chemistry#Hardness]]", demo)
    assert (r.resolved, r.path, r.heading) == (True, "Water/Water chemistry.md", "Hardness")
    # Obsidian compares headings loosely: case and spacing do not matter
    assert _one("[[Water/Water chemistry#hardness]]", demo).resolved
    # nested headings: each level must exist, in order
    assert _one("[[Water/Water chemistry#Hardness#Too soft, too hard]]", demo).resolved
    assert not _one("[[Water/Water chemistry#Alkalinity#Too soft, too hard]]", demo).resolved


def test_block_reference(demo: VaultSet) -> None:
    r = _one("[[Roasting/Development time#^dtr-rule]]", demo)
    assert (r.resolved, r.block) == (True, "dtr-rule")
    bad = _one("[[Roasting/Development time#^no-such-block]]", demo)
    assert not bad.resolved and bad.reason.startswith("block missing")


def test_missing_note_and_unknown_vault(demo: VaultSet) -> None:
    missing = _one("[[Roasting/Third crack]]", demo)
    assert not missing.resolved and missing.reason.startswith("note missing")
    assert missing.path == "Roasting/Third crack.md"
    unknown = _one("[[elsewhere:Roasting/First crack]]", demo)
    assert not unknown.resolved and unknown.reason.startswith("unknown vault")
    assert unknown.vault == "elsewhere"
    known = _one("[[demo:Roasting/First crack#What is happening]]", demo)
    assert known.resolved and known.vault == "demo"
    same_note = _one("[[#Just a heading]]", demo)
    assert not same_note.resolved and same_note.reason.startswith("note missing")


def test_name_and_alias_links_resolve_like_obsidian(demo: VaultSet) -> None:
    assert _one("[[First crack]]", demo).path == "Roasting/First crack.md"
    assert _one("[[DTR]]", demo).path == "Roasting/Development time.md"  # an alias in frontmatter


def test_layered_vaults_pick_by_prefix_and_priority(
    demo_vault: Path, make_vault: Callable[..., Path]
) -> None:
    other = make_vault({"Roasting/First crack.md": "# First crack\n\n## Only here\n\nText.\n"}, name="other")
    vaults = VaultSet([Vault(demo_vault, "demo"), Vault(other, "other")])
    try:
        assert _one("[[Roasting/First crack]]", vaults).vault == "demo"  # priority order
        # the first vault lacks the heading, the second has it: the citation resolves there
        r = _one("[[Roasting/First crack#Only here]]", vaults)
        assert (r.resolved, r.vault) == (True, "other")
        r = _one("[[demo:Roasting/First crack#Only here]]", vaults)
        assert not r.resolved and r.reason.startswith("heading missing")
    finally:
        vaults.close()


# --- summary and flags ----------------------------------------------------------------------------------


REPORT = (
    "First crack is audible [[Roasting/First crack]]. Hardness matters [[Water/Water chemistry#Hardness]].\n"
    "Aim for 20–25 % [[Roasting/Development time#^dtr-rule]]"
    " but not [[Roasting/First crack#No such heading]].\n"
    "Also [[Nowhere/Nothing]] and again [[Nowhere/Nothing]]."
)


def test_summarize_for_the_summary_file(demo: VaultSet) -> None:
    resolved = resolve_citations(extract_citations(REPORT), demo)
    citations, unresolved = summarize(resolved)
    assert json.loads(json.dumps(citations)) == citations
    assert {"vault": "demo", "path": "Roasting/First crack.md", "heading": None, "block": None,
            "resolved": True} in citations  # fmt: skip
    assert all({"vault", "path", "heading", "resolved"} <= set(c) for c in citations)
    assert all(c["path"].endswith(".md") for c in citations)
    assert [u["raw"] for u in unresolved] == [
        "[[Roasting/First crack#No such heading]]",
        "[[Nowhere/Nothing]]",
    ]
    assert all(u["reason"] for u in unresolved)


def test_flag_unresolved_marks_every_occurrence_once(demo: VaultSet) -> None:
    resolved = resolve_citations(extract_citations(REPORT), demo)
    flagged = flag_unresolved(REPORT, resolved)
    assert flagged.count(f"[[Nowhere/Nothing]] {UNRESOLVED_MARK} (note missing)") == 2
    assert f"[[Roasting/First crack#No such heading]] {UNRESOLVED_MARK} (heading missing)" in flagged
    assert f"[[Roasting/First crack]] {UNRESOLVED_MARK}" not in flagged
    assert f"[[Water/Water chemistry#Hardness]] {UNRESOLVED_MARK}" not in flagged
    assert flag_unresolved(flagged, resolved) == flagged  # idempotent
    assert flagged.count(UNRESOLVED_MARK) == 3


def test_headings_holding_links_or_link_characters(make_vault: Callable[..., Path]) -> None:
    root = make_vault({
        "IT/CPU.md": "# CPU\n\n## [[x86 Assembly|Assembly]]\n\nText.\n\n## Ratio: 1:2 [draft]\n\nMore.\n",
        "x86 Assembly.md": "# x86\n",
    })  # fmt: skip
    vaults = VaultSet([Vault(root, "v")])
    try:
        for heading in ("[[x86 Assembly|Assembly]]", "Ratio: 1:2 [draft]"):
            link = make_citation("v", "IT/CPU.md", heading)
            assert "[[" not in link[2:-2] and "|" not in link
            assert _one(link, vaults).resolved, link
        assert link == "[[IT/CPU#Ratio: 1:2 draft]]"
        # the bracket-stripped spelling of a linked heading resolves too
        assert _one("[[IT/CPU#x86 Assembly Assembly]]", vaults).resolved
        assert not _one("[[IT/CPU#Assembly language]]", vaults).resolved
    finally:
        vaults.close()


def test_a_heading_removed_since_the_last_check_no_longer_resolves(make_vault: Callable[..., Path]) -> None:
    """Checks reuse a note read before while its file is unchanged; an edit is read again."""
    root = make_vault({"Brew.md": "# Brew\n\n## Ratio\n\n1:16.\n"})
    vaults = VaultSet([Vault(root, "v")])
    try:
        assert _one("[[Brew#Ratio]]", vaults).resolved
        assert _one("[[Brew#Ratio]]", vaults).resolved  # read once, checked twice
        (root / "Brew.md").write_text("# Brew\n\n## Proportions\n\n1:16, or 60 g per litre.\n")
        assert not _one("[[Brew#Ratio]]", vaults).resolved
        assert _one("[[Brew#Proportions]]", vaults).resolved
    finally:
        vaults.close()
