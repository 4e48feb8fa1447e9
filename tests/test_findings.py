"""``Findings``: what a node's dependencies found reaches its retrieval. The script prompt names their
answers, and both retrievers follow links from the notes they read (a two-step goal's second step)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _cli import caller

from engine.codemode import Sandbox
from engine.llm import LLMRequest, LLMResponse
from engine.retrieval import REFERENTS, CodeModeRetriever, DirectSearchRetriever, Findings
from engine.vault import Vault, VaultSet

pytestmark = pytest.mark.usefixtures("shad_home")

TASK = "In that protocol, which line carries the data?"


A_TWICE = {"context": [{"vault": "v", "path": "A.md"}] * 2}


def test_findings_take_each_dependencys_answer_and_its_first_notes() -> None:
    found = Findings.of(
        [
            (
                "n1",
                "SPI is  similar to\nI2C [[Hardware/SPI]]",
                {"context": [{"vault": "v", "path": "A.md"}] * 2},
            ),
            ("n2", "", {"context": [{"vault": "v", "path": p} for p in ("B.md", "C.md", "D.md")]}),
            ("n3", "x" * 1000, {"context": [{"vault": "v", "path": p} for p in ("E.md", "F.md")]}),
        ]
    )
    assert found.answers == (("n1", "SPI is similar to I2C [[Hardware/SPI]]"), ("n3", "x" * 300))
    # two notes per dependency at most (a repeated note once), four in all
    assert found.notes == (("v", "A.md"), ("v", "B.md"), ("v", "C.md"), ("v", "E.md"))
    assert "- n1: SPI is similar to I2C" in found.prompt() and "n2" not in found.prompt()
    assert found and not Findings() and Findings().prompt() == ""
    assert found.to_dict()["notes"][0] == ["v", "A.md"]


@pytest.fixture
def two_step(tmp_path: Path) -> Iterator[VaultSet]:
    """SPI's note names the protocol it resembles; that protocol's note holds the answer; many other notes
    hold every word of the second step's question, so searching it alone never reaches the answer."""
    root = tmp_path / "hw"
    (root / "Hardware").mkdir(parents=True)
    (root / "Hardware/Serial Peripheral Interface.md").write_text(
        "# Serial Peripheral Interface\n\nA 4-wire serial protocol. "
        "Similar to [[Inter-Integrated Circuit]].\n"
    )
    (root / "Hardware/Inter-Integrated Circuit.md").write_text(
        "# Inter-Integrated Circuit\n\n- SDA bus for data\n- SCL bus for the clock\n"
    )
    for i in range(10):
        (root / f"Hardware/Bus {i}.md").write_text(
            f"# Bus {i}\n\nIn protocol {i} the data line carries the data; which line carries it matters.\n"
        )
    vaults = VaultSet([root])
    yield vaults
    vaults.close()


FIRST_STEP = Findings(
    (("n1", "SPI is similar to I2C [[Hardware/Serial Peripheral Interface]]"),),
    (("hw", "Hardware/Serial Peripheral Interface.md"),),
)


def test_direct_retrieval_follows_the_links_of_the_notes_a_dependency_read(two_step: VaultSet) -> None:
    retriever = DirectSearchRetriever(two_step, limit=4)
    alone = asyncio.run(retriever.retrieve(TASK, TASK, "n2"))
    after = asyncio.run(retriever.retrieve(TASK, TASK, "n2", FIRST_STEP))
    assert "Hardware/Inter-Integrated Circuit.md" not in [c.path for c in alone.context]
    answer = [c for c in after.context if c.path == "Hardware/Inter-Integrated Circuit.md"]
    assert answer and "SDA bus for data" in answer[0].text
    assert "notes linked with the best hits" in after.queries


class _Recorder:
    """The model's side of Code Mode: records each script request, answers with one search script."""

    SCRIPT = (
        "hits = obsidian.search('which line carries the data', limit=3)\n"
        "__result__ = {'context': [{'vault': h['vault'], 'path': h['path'], 'heading': h['heading'], "
        "'text': h['passage'], "
        "'citation': obsidian.create_wikilink(h['path'], h['heading'])} for h in hits], "
        "'citations': [], 'queries': ['which line carries the data'], 'signals': {}, 'confidence': 0.9, "
        "'why': 'search'}\n"
    )

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    async def __call__(self, node_id: str, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return LLMResponse(text=self.SCRIPT, provider="recorder", model="script")


def _codemode(vaults: VaultSet, ask: _Recorder, records: dict[str, Any]) -> CodeModeRetriever:
    sandbox = Sandbox(vaults)
    return CodeModeRetriever(vaults, sandbox, ask, lambda name, data: records.__setitem__(name, data))


def test_a_script_request_names_what_the_dependencies_found(two_step: VaultSet) -> None:
    ask, records = _Recorder(), dict[str, Any]()
    retriever = _codemode(two_step, ask, records)
    try:
        alone = asyncio.run(retriever.retrieve(TASK, TASK, "n2"))
        after = asyncio.run(retriever.retrieve(TASK, TASK, "n3", FIRST_STEP))
    finally:
        retriever.sandbox.close()
    first, second = ask.requests[0], ask.requests[-1]
    assert "builds on" not in first.prompt and "findings" not in first.inputs
    assert "- n1: SPI is similar to I2C" in second.prompt
    assert second.inputs["findings"] == ["SPI is similar to I2C [[Hardware/Serial Peripheral Interface]]"]
    # the engine follows links from the dependency's note, whatever the script found
    assert "Hardware/Inter-Integrated Circuit.md" not in [c.path for c in alone.context]
    assert "Hardware/Inter-Integrated Circuit.md" in [c.path for c in after.context]


@pytest.fixture
def developer(tmp_path: Path) -> Iterator[VaultSet]:
    """A plugin's note links to its developer's note, which holds only "Website"; a category index links to
    the plugin and 160 others and holds every word of the question; other developers' notes match the
    question's words better than the one the first step found."""
    root = tmp_path / "hub"
    for folder in ("Plugins", "People", "Categories"):
        (root / folder).mkdir(parents=True)
    (root / "Plugins/katex.md").write_text("# KaTeX\n\nDeveloped by: [[pejakovic]]\nIn [[Uncategorized]].\n")
    (root / "People/pejakovic.md").write_text("# pejakovic\n\n- Website: https://github.com/pejakovic\n")
    index = "".join(f"- [[p{i}]]\n" for i in range(160))
    (root / "Categories/Uncategorized.md").write_text(f"Each developer here lists a website.\n\n{index}")
    for i in range(160):
        (root / f"Plugins/p{i}.md").write_text(f"Plugin {i}.\n")
    for name in ("Developer-Mike", "db-developer", *(f"developer-{i}" for i in range(8))):
        (root / f"People/{name}.md").write_text(f"# {name}\n\n- Website: https://{name}.dev (a developer)\n")
    vaults = VaultSet([root])
    yield vaults
    vaults.close()


def test_a_second_step_reaches_the_note_one_link_away_not_a_category_index(developer: VaultSet) -> None:
    task = "What website does that developer list?"
    first = Findings((("n1", "Developed by: pejakovic [[Plugins/katex]]"),), (("hub", "Plugins/katex.md"),))
    direct = asyncio.run(DirectSearchRetriever(developer, limit=4).retrieve(task, task, "n2", first))
    paths = [c.path for c in direct.context]
    assert "People/pejakovic.md" in paths  # holds "Website" only: found by that word
    # what "that developer" points at: the sections one link from the first step's notes
    assert direct.signals[REFERENTS] == ["[[People/pejakovic#pejakovic]]"]
    assert "Categories/Uncategorized.md" not in paths  # an index of 160 notes is no step of a question
    ask, records = _Recorder(), dict[str, Any]()
    ask.SCRIPT = ask.SCRIPT.replace("which line carries the data", "website developer")
    retriever = _codemode(developer, ask, records)
    try:
        after = asyncio.run(retriever.retrieve(task, task, "n2", first))
    finally:
        retriever.sandbox.close()
    linked = after.signals["linked"]
    assert linked and [c.citation for c in after.context[: len(linked)]] == linked  # before the script's own
    assert after.signals[REFERENTS] == linked
    assert any("https://github.com/pejakovic" in c.text for c in after.context)
    assert "Categories/Uncategorized.md" not in [c.path for c in after.context]


class _CommonWords(Vault):
    """A vault whose question words are all common: searching a note for all of them finds nothing (as
    "website developer" in obsidian-hub's people notes), one of them finds the note."""

    def search(self, query: str, limit: int = 10, path: str | None = None, **kw: Any) -> list[Any]:
        if path and len(query.split()) > 1:
            return []
        return super().search(query, limit, path, **kw)


def test_a_linked_note_holding_one_word_of_the_question_is_quoted_by_it(developer: VaultSet) -> None:
    vaults = VaultSet([_CommonWords(developer.vaults[0].root)])
    task = "What website does that developer list?"
    first = Findings((("n1", "Developed by: pejakovic [[Plugins/katex]]"),), (("hub", "Plugins/katex.md"),))
    try:
        found = DirectSearchRetriever(vaults, limit=4).linked(task, list(first.notes), [], hop=True)
    finally:
        vaults.close()
    assert [c.path for c in found][:1] == ["People/pejakovic.md"]
    assert "https://github.com/pejakovic" in found[0].text


def test_a_second_step_that_says_it_looks_at_the_first_steps_own_note_first(developer: VaultSet) -> None:
    """ "..., and who developed it?": the plugin the first step found names its developer on its own note;
    other notes holding "developed" (the developers' notes, one link away or not) come after it."""
    first = Findings((("n1", "KaTeX [[Plugins/katex]]"),), (("hub", "Plugins/katex.md"),))
    found = DirectSearchRetriever(developer, limit=4).linked(
        "who developed it?", list(first.notes), [], hop=True
    )
    assert [c.path for c in found][:1] == ["Plugins/katex.md"]
    assert "Developed by: [[pejakovic]]" in found[0].text


def test_a_two_step_report_answers_each_clause_in_its_own_section(
    developer: VaultSet, capsys: pytest.CaptureFixture[str]
) -> None:
    """Offline, end to end: the second clause quotes the website of the developer the first clause found,
    not of notes named "developer", and the first clause's byline stays in its own section."""
    goal = "Who developed the KaTeX plugin, and what website does that developer list?"
    shad = caller(capsys)
    root = str(developer.vaults[0].root)
    done = shad("run", goal, "--vault", root, "--provider", "offline", "--json", "--no-checkpoints")
    assert done.code in (0, 3), done.out + done.err
    report = Path(done.json()["report_path"]).read_text(encoding="utf-8")
    sections = {s.split("\n", 1)[0]: s for s in report.split("### ")[1:]}
    website = sections["What website does that developer list?"]
    first = next(line for line in website.splitlines() if line.startswith("- "))
    assert "https://github.com/pejakovic" in first
    assert "pejakovic" in sections["Who developed the KaTeX plugin"]


def test_the_note_a_property_the_question_names_links_to_is_followed(tmp_path: Path) -> None:
    """ "The host of the Well Made podcast": the podcast's ``host`` property links to the person, whose note
    says nothing of the question's words; its properties (web address included) reach the context."""
    root = tmp_path / "refs"
    (root / "References").mkdir(parents=True)
    (root / "References/Well Made.md").write_text(
        '---\ncategories:\n  - "[[Podcasts]]"\nhost:\n  - "[[Steph Ango]]"\n---\n## Episodes\n'
    )
    (root / "References/Steph Ango.md").write_text(
        '---\ncategories:\n  - "[[People]]"\nurl: https://stephango.com/\n---\n## Clippings\n'
    )
    for i in range(5):
        (root / f"References/Episode {i}.md").write_text(f'---\nshow: "[[Well Made]]"\n---\nEpisode {i}.\n')
    vaults = VaultSet([root])
    try:
        task = "What is the personal website of the host of the Well Made podcast?"
        found = asyncio.run(DirectSearchRetriever(vaults, limit=4).retrieve(task, task, "n1"))
    finally:
        vaults.close()
    person = [c for c in found.context if c.path == "References/Steph Ango.md"]
    assert person and "url: https://stephango.com/" in person[0].text
