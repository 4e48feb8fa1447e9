"""Pruning by novelty (E10, ``engine.runs._novelty``): a subtask whose passages a finished sibling already
holds is pruned before its answer call, named redundant with that sibling, and is neither a missing branch
nor a reason for PARTIAL; a subtask with passages of its own always answers. Real runs over a copy of the
demo vault, with the real Anthropic SDK against the local stand-in server (only the model is a stand-in)."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from engine import RunConfig
from engine.cli._live import render_tree
from engine.runs import Run, RunStatus, start_run
from engine.runs._novelty import covering
from engine.runs._resume_plan import plan_resume
from engine.runs.cache import NodeCache
from engine.runs.dag import Dag, NodeStatus
from engine.store import SQLiteStore
from engine.vault import VaultSet

try:
    from tests._fake_llm import FakeLLMServer, prompt_of, well_behaved
except ImportError:  # pragma: no cover - run from inside tests/
    from _fake_llm import (  # type: ignore[no-redef,import-not-found,unused-ignore]
        FakeLLMServer,
        prompt_of,
        well_behaved,
    )

GOAL = "How long should roasted beans rest? What grind size suits a French press?"
REST = "How long should roasted beans rest?"
# The model asks the same thing twice (as plans do), and once something else.
PLAN = {
    "nodes": [
        {"id": "rest", "task": REST, "stage": "gather_evidence"},
        {"id": "rest_again", "task": REST, "stage": "gather_evidence"},
        {"id": "grind", "task": "What grind size suits a French press?", "stage": "gather_evidence"},
    ]
}


def passage(path: str, heading: str | None, text: str, vault: str = "v") -> dict[str, Any]:
    return {"vault": vault, "path": path, "heading": heading, "text": text, "citation": f"[[{path}]]"}


# --- what counts as the same passage ---------------------------------------------------------------------


def test_passages_held_by_others_are_covered_by_those_that_hold_them() -> None:
    a = passage("Roasting/Resting beans.md", "How long", "Rest beans three to five days.")
    b = passage("Brewing/Grind size.md", "Chart", "Coarse for the French press.")
    assert covering([a, b], [("s1", [a]), ("s2", [b, a])]) == ["s1", "s2"]
    assert covering([a], [("s1", [b]), ("s2", [a])]) == ["s2"]


def test_a_near_identical_text_under_another_path_is_the_same_passage() -> None:
    text = "Roasted beans should rest for three to five days so carbon dioxide escapes before brewing."
    copy = passage("Roasting/Resting (copy).md", None, text.replace("days", "days,"))
    assert covering([copy], [("s1", [passage("Roasting/Resting beans.md", "How long", text)])]) == ["s1"]


def test_one_new_passage_or_none_at_all_is_not_redundant() -> None:
    a = passage("Roasting/Resting beans.md", "How long", "Rest beans three to five days.")
    new = passage("Roasting/Resting beans.md", "Why", "Carbon dioxide leaves the beans while they rest.")
    assert covering([a, new], [("s1", [a])]) == []  # same note, another heading: something new
    assert covering([], [("s1", [a])]) == []  # nothing found is not nothing new


# --- a real run ------------------------------------------------------------------------------------------


def model(body: dict[str, Any]) -> str:
    prompt = prompt_of(body)
    if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
        return json.dumps(PLAN)
    return well_behaved(prompt)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "shad-home"))
    monkeypatch.delenv("SHAD_REPLAY", raising=False)
    with FakeLLMServer(reply=model) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-novelty")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


@pytest.fixture
def vault(tmp_path: Path, demo_vault: Path) -> Path:
    target = tmp_path / "vault"
    shutil.copytree(demo_vault, target)
    return target


def go(vault: Path, **options: Any) -> Run:
    options.setdefault("code_mode", False)
    return asyncio.run(start_run(RunConfig(GOAL, (str(vault),), provider="anthropic", **options)))


def answer_prompts(server: FakeLLMServer, task: str) -> int:
    """Answer calls made for ``task`` (the prompt names the subtask it answers)."""
    return sum(
        1
        for seen in server.requests
        if seen.body
        and f"Your subtask: {task}" in prompt_of(seen.body)
        and "Answers of the subtasks" not in prompt_of(seen.body)
    )


@pytest.mark.parametrize("parallel", [1, 4])
def test_a_subtask_with_the_same_passages_as_a_finished_sibling_is_pruned_without_a_model_call(
    vault: Path, server: FakeLLMServer, parallel: int
) -> None:
    r = go(vault, max_parallel=parallel)
    rest, again, grind = (r.dag.node(i) for i in ("rest", "rest_again", "grind"))
    pruned = [n for n in (rest, again) if n.redundant]
    # The later of the two in plan order is pruned, whichever finished retrieving first.
    assert pruned == [again], [(n.id, n.status, n.note) for n in r.dag]
    kept = rest
    assert pruned[0].status is NodeStatus.PRUNED and pruned[0].redundant_with == [kept.id]
    assert f"same passages as {kept.id}" in pruned[0].note and pruned[0].answer == ""
    assert pruned[0].llm_calls == 0 and answer_prompts(server, REST) == 1  # one answer for the one ask
    assert kept.status is NodeStatus.SUCCEEDED
    # The subtask with passages of its own answers; the parent synthesizes what was found.
    assert grind.status is NodeStatus.SUCCEEDED and not grind.redundant_with
    assert r.dag.root().status is NodeStatus.SUCCEEDED and r.dag.root().answer
    # Honest everywhere: not missing, not PARTIAL, said in the report, the summary and the metrics.
    assert r.status is RunStatus.SUCCESS and r.summary["missing_branches"] == []
    assert r.summary["pruned_redundant"] == [
        {"node_id": pruned[0].id, "task": REST, "same_as": [kept.id], "tokens_saved_est": kept.tokens}
    ]
    assert r.summary["metrics"]["pruned_redundant"] == 1
    assert r.summary["metrics"]["tokens_saved_est"] == kept.tokens > 0
    assert f"- pruned as redundant: `{pruned[0].id}` {REST} (same passages as `{kept.id}`" in r.report
    assert "## Missing branches" not in r.report
    saved = json.loads((r.history.dir / "dag.json").read_text("utf-8"))
    assert {n["id"]: n["redundant_with"] for n in saved["nodes"]}[pruned[0].id] == [kept.id]
    pruned_events = [
        json.loads(line)
        for line in (r.history.dir / "events.jsonl").read_text("utf-8").splitlines()
        if '"NODE_PRUNED"' in line
    ]
    assert [(e["node"], e["reason"]) for e in pruned_events] == [(pruned[0].id, pruned[0].note)]
    # The tree the CLI prints after a run says why it never answered.
    console = Console(record=True, width=240)
    console.print(render_tree(r.dag, "run"))
    tree = console.export_text()
    assert f"{pruned[0].id} PRUNED" in tree and f"pruned: repeats {kept.id}" in tree


def test_a_resume_keeps_a_redundant_subtask_pruned_unless_its_holder_runs_again(
    vault: Path, server: FakeLLMServer, tmp_path: Path
) -> None:
    r = go(vault, max_parallel=1)
    pruned = next(n for n in r.dag if n.redundant)
    store = SQLiteStore(tmp_path / "store.sqlite3")
    try:
        cache = NodeCache(store, VaultSet([str(vault)]), run_id="r")
        dag = Dag.from_json(r.dag.to_json())
        plan = plan_resume(dag, cache)
        assert pruned.id in plan.kept and pruned.id not in plan.redo
        assert dag.node(pruned.id).redundant
        # The sibling that held its passages runs again: the novelty judgement is made again too.
        dag = Dag.from_json(r.dag.to_json())
        plan = plan_resume(dag, cache, replay=pruned.redundant_with[0])
        assert pruned.id in plan.redo
        assert dag.node(pruned.id).status is NodeStatus.CREATED and dag.node(pruned.id).redundant_with == []
    finally:
        store.close()


def test_an_identical_rerun_prunes_the_same_subtask_and_makes_no_model_call(
    vault: Path, server: FakeLLMServer
) -> None:
    first = go(vault, max_parallel=4)
    before = server.count
    again = go(vault, max_parallel=4)
    assert server.count == before  # every answer from the cache; the redundant one judged again
    assert (
        [n.id for n in again.dag if n.redundant] == [n.id for n in first.dag if n.redundant] == ["rest_again"]
    )
    assert again.dag.node("rest").status is NodeStatus.CACHE_HIT
    assert again.status is RunStatus.SUCCESS and again.summary["metrics"]["pruned_redundant"] == 1
