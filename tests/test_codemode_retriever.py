"""Retrieval with Code Mode inside a run: scripts in the sandbox, untrusted results, the recovery ladder."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

from engine import RunConfig
from engine.llm import LLMRequest, LLMResponse
from engine.llm.offline import OfflineProvider
from engine.runs import Run, start_run

QUESTION = "How long should I rest beans after roasting?"


pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "vault"
    shutil.copytree(DEMO, root)
    yield root


class ScriptedModel:
    """The offline provider, except that retrieval scripts come from a list (one per request)."""

    name = "scripted"

    def __init__(self, scripts: list[str]) -> None:
        self.scripts = list(scripts)
        self.offline = OfflineProvider()
        self.script_requests: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if request.purpose == "script":
            self.script_requests.append(request)
            text = self.scripts.pop(0) if self.scripts else "__result__ = {}"
            return LLMResponse(text, "scripted", "scripted-model", input_tokens=10, output_tokens=10)
        return await self.offline.complete(request)

    async def aclose(self) -> None:
        return None


def _run(vault: Path, provider: Any, goal: str = QUESTION, **options: Any) -> Run:
    import asyncio

    config = RunConfig(goal, (str(vault),), **options)
    return asyncio.run(start_run(config, provider=provider))


def _artifacts(run: Run) -> dict[str, Any]:
    folder = run.history.dir / "artifacts" / "scripts"
    return {
        p.name: (p.read_text() if p.suffix == ".py" else json.loads(p.read_text())) for p in folder.glob("*")
    }


def test_default_run_retrieves_with_scripts_in_the_sandbox(vault: Path) -> None:
    run = _run(vault, OfflineProvider())
    assert run.status.value == "SUCCESS"
    modes = [e for e in run.events if e["type"] == "RETRIEVAL_MODE"]
    assert modes and modes[0]["mode"] == "codemode"
    files = _artifacts(run)
    assert "root-1.py" in files and "obsidian.search" in files["root-1.py"]
    assert files["root-1.json"]["stats"]["isolation"] in ("bubblewrap", "subprocess")
    assert run.dag.root().retrieval["method"] == "codemode"
    assert any("Roasting/Resting beans" in c["path"] for c in run.summary["citations"])


def test_fabricated_context_is_dropped_and_the_ladder_falls_back(vault: Path) -> None:
    forged = (
        '__result__ = {"context": [{"vault": "vault", "path": "Roasting/Resting beans.md", "heading": None,'
        ' "text": "Beans must rest exactly 90 days in a freezer.",'
        ' "citation": "[[Roasting/Resting beans]]"}],'
        ' "queries": ["rest"], "confidence": 1.0, "why": "trust me"}'
    )
    model = ScriptedModel([forged, forged])
    run = _run(vault, model)
    files = _artifacts(run)
    assert files["root-1.json"]["dropped"][0]["reason"] == "text does not occur in the cited note"
    assert len(model.script_requests) == 2  # one regeneration, with a hint saying what fell short
    assert "previous script" in model.script_requests[1].prompt  # what fell short, for a model
    assert "previous script" not in str(model.script_requests[1].inputs["hints"])  # queries, for templates
    assert run.dag.root().retrieval["method"] == "codemode+direct"
    assert "90 days" not in run.report


def test_a_context_item_that_names_its_note_is_cited_by_full_path(vault: Path) -> None:
    """A script may give a note's name (or alias) as a link does: the item is kept, and cited by the full
    path (a report cites full-path wikilinks only)."""
    named = (
        '__result__ = {"context": [{"vault": "vault", "path": "Degassing", "heading": None,'
        ' "text": "It needs to rest for some days while it releases carbon dioxide (CO2)"}],'
        ' "queries": ["rest"], "confidence": 0.9, "why": "named"}'
    )
    run = _run(vault, ScriptedModel([named]))
    files = _artifacts(run)
    assert not files["root-1.json"].get("dropped")
    retrieved = run.dag.root().retrieval
    assert retrieved["method"] == "codemode"
    assert any(c["path"] == "Roasting/Resting beans.md" for c in run.summary["citations"])
    assert "[[Degassing" not in run.report


def test_a_name_is_checked_for_where_it_leads(vault: Path) -> None:
    """The folders and copies never cited are refused by the path a name resolves to, not only by the
    name as the script wrote it."""
    copy = "Brewing/Espresso (conflict 2026-04-02).md"
    text = (vault / copy).read_text().split("\n\n")[1].strip()[:120]
    named = (
        '__result__ = {"context": [{"vault": "vault", "path": "Espresso (conflict 2026-04-02)",'
        f' "heading": None, "text": {json.dumps(text)}}}], "queries": ["espresso"], "confidence": 0.9,'
        ' "why": "named"}'
    )
    run = _run(vault, ScriptedModel([named, named]), goal="What is espresso?")
    files = _artifacts(run)
    assert files["root-1.json"]["dropped"][0]["path"] == copy
    assert "sync-conflict copy" in files["root-1.json"]["dropped"][0]["reason"]


def test_a_search_passage_quoted_as_is_is_never_taken_for_a_forgery(tmp_path: Path) -> None:
    """A hit's passage leaves out what a reader never sees (comments, an image's address) and its
    properties' web addresses, and joins a note's opening to the section that matched; its snippet is a
    window of it: quoted as is, either still occurs in its note. Text that is not in the note does not."""
    from _demo import write_vault

    from engine.retrieval import CodeModeRetriever
    from engine.vault import Vault, VaultSet

    long_list = "\n".join(f"- [[Tool {i}]] does task number {i}" for i in range(400))
    root = write_vault(
        tmp_path / "v",
        {
            "People/Unarray.md": "# Unarray\n\n- GitHub: unarray ^github\n<!-- - Discord: `@` ^discord-->\n"
            "- Website: <https://unarray.example> ^website\n%% a bio goes here %%\n\n## Author of\n\n"
            "%% Begin Hub %%\n### Plugins\n- [[File Tree Generator]]\n",
            "Theme.md": '---\ncategories:\n  - "[[Projects]]"\nurl: https://minimal.example\n'
            "status: Active\n---\n"
            "## To-do\n\n- [x] Color schemes ![badge](https://img.example/b.svg)\n- [x] Mobile support\n",
            "Tools.md": f"# Tools\n\nEvery tool.\n\n## List\n{long_list}\n",
            "Long.md": "# Long\n\n" + "Filler words here. " * 60 + "The zymurgy needle sits here.\n",
        },
    )
    vaults = VaultSet([Vault(root)])
    retriever = CodeModeRetriever(vaults, None, None, None)  # type: ignore[arg-type]
    checked = 0
    queries = ("unarray website", "plugins file tree", "color schemes", "task number 371", "zymurgy needle")
    for query in queries:
        for hit in vaults.search(query, limit=3):
            for text in (hit.passage, hit.snippet):  # a snippet: a window, marked "…" where it was cut
                assert retriever._check(hit.vault, hit.path, text) == (None, hit.path), text[:200]
                checked += 1
    assert checked >= 8
    forged = "# Unarray\n\nUnarray wrote forty plugins and a theme."
    assert retriever._check("v", "People/Unarray.md", forged)[0] == "text does not occur in the cited note"


def test_a_blocked_script_is_recorded_and_regenerated_once(vault: Path) -> None:
    model = ScriptedModel(["data = open('/etc/passwd').read()\n__result__ = {'context': data}"])
    run = _run(vault, model)
    files = _artifacts(run)
    assert files["root-1.json"]["error"]["kind"] == "blocked"
    assert "root-2.py" in files  # the ladder regenerated once (here: an empty result)
    assert run.status.value == "SUCCESS"  # then the broadened direct search answered
    assert "root:x:0:0" not in run.report


def test_regenerations_are_capped_per_run(vault: Path) -> None:
    goal = (
        "Compare pour-over and French press, explain water hardness, first crack, resting, "
        "espresso ratios and grinders; list the sources for each."
    )
    model = ScriptedModel([])  # every script returns nothing useful
    run = _run(vault, model, goal)
    nodes = [n for n in run.dag if not run.dag.children(n.id)]
    assert len(nodes) >= 4
    assert len(model.script_requests) <= len(nodes) + 5  # one first try each, at most 5 retries in all


def test_no_code_mode_searches_directly(vault: Path) -> None:
    run = _run(vault, OfflineProvider(), code_mode=False)
    modes = [e for e in run.events if e["type"] == "RETRIEVAL_MODE"]
    assert modes[0]["mode"] == "direct"
    assert not (run.history.dir / "artifacts" / "scripts").exists()
    assert run.dag.root().retrieval["method"] == "direct"


def test_an_unusable_script_reply_does_not_fail_the_node(vault: Path) -> None:
    model = ScriptedModel(["", ""])  # the model answers the script request with nothing, twice
    run = _run(vault, model)
    assert run.status.value == "SUCCESS"
    assert run.dag.root().retrieval["method"] == "codemode+direct"
    assert _artifacts(run)["root-1.json"]["error"]["kind"] in ("malformed", "refused")


def test_the_script_prompt_offers_what_the_profile_allows(vault: Path, tmp_path: Path) -> None:
    from engine.codemode import Sandbox
    from engine.retrieval._codemode import API_DESCRIPTION, api_description

    strict = Sandbox(vault)
    try:
        assert api_description(strict) == API_DESCRIPTION
    finally:
        strict.close()
    docs = tmp_path / "docs"
    docs.mkdir()
    extended = Sandbox(vault, profile="extended", fs_read=[docs], net_allow=["docs.example.org"])
    try:
        text = api_description(extended)
        assert "obsidian.read_file" in text and "read-only folders: docs" in text
        assert "obsidian.http_get" in text and "docs.example.org only" in text
    finally:
        extended.close()


def test_every_attempt_to_leave_the_machine_is_an_event(vault: Path) -> None:
    """A refused network call ends its script (blocked); the ladder's next script tries another. Both
    attempts are events, with why they were refused."""
    scripts = [
        f"obsidian.http_get({url!r})\n__result__ = {{}}"
        for url in ("https://127.0.0.1/x", "https://example.org/")
    ]
    strict = _run(vault, ScriptedModel(list(scripts)), code_mode=True)
    calls = [e for e in strict.events if e["type"] == "EXTERNAL_CALL"]
    assert [(c["target"], c["allowed"]) for c in calls] == [
        ("https://127.0.0.1/x", False),
        ("https://example.org/", False),
    ]
    assert all("allows no network" in c["reason"] and c["node"] == "root" for c in calls)
    extended = _run(
        vault,
        ScriptedModel(scripts[:1]),
        code_mode=True,
        profile="extended",
        net_allow=("127.0.0.1",),
        use_cache=False,
    )
    (private,) = [e for e in extended.events if e["type"] == "EXTERNAL_CALL"]
    assert private["allowed"] is False and "non-public" in private["reason"]


def test_the_engine_follows_links_from_what_a_script_found(tmp_path: Path) -> None:
    """A script finds the first step of a two-step question; the word it lacks ('sociologist', 'theme')
    is in a note one link away, which the engine adds (no model call) and the answer cites."""
    from _demo import write_vault

    root = write_vault(
        tmp_path / "hub",
        {
            "Plugins/Divide and Conquer.md": (
                "# Divide and Conquer\nDeveloped by: [[People/pseudometa]]\n"
                "Bulk enabling and disabling of plugins, to find the slow one.\n"
            ),
            "People/pseudometa.md": (
                "# pseudometa\nIn my day job, I am a sociologist.\n## Themes\n- [[Shimmering Focus]]\n"
            ),
            "People/someone.md": "# someone\nA developer of many plugins.\n",
        },
    )
    script = (
        'hit = obsidian.search("Divide and Conquer plugin", limit=1)[0]\n'
        '__result__ = {"context": [{"vault": hit["vault"], "path": hit["path"], "heading": hit["heading"],'
        ' "text": hit["passage"], "citation": "[[" + hit["path"][:-3] + "]]"}], "confidence": 0.9}\n'
    )
    model = ScriptedModel([script])
    run = _run(root, model, goal="The Divide and Conquer plugin's developer is a sociologist: what theme?")
    record = _artifacts(run)["root-1.json"]
    assert [c.split("#")[0] for c in record["linked"]] == ["[[People/pseudometa"]
    assert len(model.script_requests) == 1  # the links lifted the retrieval: no second script
    cited = {c["path"] for c in run.summary["citations"]}
    assert {"Plugins/Divide and Conquer.md", "People/pseudometa.md"} <= cited
