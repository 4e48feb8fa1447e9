"""The engine end to end: ``Orchestrator.execute`` and ``engine.run`` over a copy of the demo vault, with the
offline provider, with the real Anthropic SDK against our local fake server (faults scripted), and with a
replay of a recorded run. Every run writes its history into the vault copy, never into the repository."""

from __future__ import annotations

import asyncio
import json
import re
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import engine.runs._model_calls as model_calls_module
import engine.runs.orchestrator as orchestrator_module
from engine import Budgets, Run, RunConfig, RunStatus, arun, run
from engine.events import LIVE_ONLY
from engine.llm import LLMRequest, LLMResponse, Provider, ReplayProvider
from engine.llm import get as get_provider
from engine.retrieval import DirectSearchRetriever, RetrievalResult
from engine.runs import resume, start_run
from engine.runs.dag import NodeStatus
from engine.vault import VaultSet

try:
    from tests._fake_llm import (
        FakeLLMServer,
        Fault,
        cut_stream,
        empty,
        prompt_of,
        prose,
        rate_limited,
        refusal,
        well_behaved,
    )
except ImportError:  # pragma: no cover - run from inside tests/
    from _fake_llm import (  # type: ignore[no-redef,import-not-found,unused-ignore]
        FakeLLMServer,
        Fault,
        cut_stream,
        empty,
        prompt_of,
        prose,
        rate_limited,
        refusal,
        well_behaved,
    )

PROVIDER_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SHAD_REPLAY")
TINY = 9000  # lets the first subtask finish, not the others (each call reserves its prompt, counted high,
# plus its max_tokens, and the root keeps its synthesis reserve). Measured: 8300 to beyond 10500, with a
# resume of +30000 (the whole run takes ~25k tokens: +20000 left a window of 9000-9100 only)
SIMPLE = "How long should roasted beans rest before brewing?"
MULTI = (
    "How long should roasted beans rest before brewing? What grind size suits a French press? "
    "How do I filter tap water for brewing?"
)
TWO_PART = "How long should roasted beans rest? What grind size suits a French press?"
KEY = "test-key-anthropic-0123456789-do-not-log"  # not key-shaped: only the env-based scrubbing hides it
WIKILINK = re.compile(r"\[\[([^\]|#]+)(?:#([^\]|]+))?(?:\|[^\]]*)?\]\]")
SUMMARY_KEYS = {
    "run_id",
    "status",
    "goal",
    "strategy",
    "provider",
    "report_path",
    "citations",
    "unresolved_citations",
    "metrics",
    "missing_branches",
    "resume_command",
    "failures",
}
METRIC_KEYS = {"total_tokens", "llm_calls", "nodes_executed", "cache_hits", "duration_ms"}


# --- fixtures and helpers --------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def shad_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "shad-home"
    monkeypatch.setenv("SHAD_HOME", str(home))
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def vault(demo_copy: Path) -> Path:
    return demo_copy


class Counting:
    """Wraps a provider and remembers every request it was asked (purpose, node id)."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[tuple[str, str | None]] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append((request.purpose, request.node_id))
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def offline(goal: str, vault: Path, **options: Any) -> Run:
    budgets = {k: options.pop(k) for k in list(options) if k in Budgets.__dataclass_fields__}
    return run(RunConfig(goal, (str(vault),), provider="offline", budgets=Budgets(**budgets), **options))


def events(r: Run) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (r.history.dir / "events.jsonl").read_text("utf-8").splitlines()]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def frontmatter(report: str) -> dict[str, Any]:
    assert report.startswith("---\n"), report[:200]
    data = yaml.safe_load(report.split("\n---\n", 1)[0].removeprefix("---\n"))
    assert isinstance(data, dict)
    return data


def assert_links_resolve(text: str, vault: Path) -> list[str]:
    """Every wikilink in ``text`` is a full vault path to an existing note (and heading, when given)."""
    targets = []
    for target, heading in WIKILINK.findall(text):
        note = vault / f"{target}.md"
        assert note.is_file(), f"[[{target}]] is not a full path to a note in the vault"
        if heading:
            assert re.search(rf"^#+\s+{re.escape(heading)}\s*$", note.read_text("utf-8"), re.M), (
                f"[[{target}#{heading}]]: no such heading"
            )
        targets.append(target)
    return targets


def files_under(folder: Path) -> Iterator[Path]:
    return (p for p in folder.rglob("*") if p.is_file())


# --- a simple question, a multi-part goal, the history ----------------------------------------------------


def test_simple_question_runs_as_one_node_and_cites_resolvable_full_path_links(vault: Path) -> None:
    r = offline(SIMPLE, vault)
    assert r.status is RunStatus.SUCCESS and r.exit_code == 0
    assert [n.id for n in r.dag] == ["root"]
    decision = read_json(r.history.dir / "decisions" / "decomposition.json")
    assert decision["decompose"] is False and "single node" in decision["reason"]
    assert not (r.history.dir / "decisions" / "plan-root.json").exists()
    body = r.report.split("\n---\n", 1)[1]
    targets = assert_links_resolve(body, vault)
    assert "Roasting/Resting beans" in targets  # the note that answers the question
    assert r.summary["unresolved_citations"] == []
    assert r.citations and all(c["resolved"] for c in r.citations)
    assert {"vault": vault.name, "path": "Roasting/Resting beans.md"}.items() <= next(
        c for c in r.citations if c["path"] == "Roasting/Resting beans.md"
    ).items()
    assert r.summary["provider"] == "offline" and "offline provider" in r.report


def test_multi_part_goal_decomposes_and_synthesizes(vault: Path) -> None:
    r = offline(MULTI, vault)
    assert r.status is RunStatus.SUCCESS
    decisions = r.history.dir / "decisions"
    assert read_json(decisions / "decomposition.json")["decompose"] is True
    strategy = read_json(decisions / "strategy.json")
    assert strategy["strategy"] == r.strategy == r.summary["strategy"]
    plan = read_json(decisions / "plan-root.json")
    children = [n.id for n in r.dag.children("root")]
    assert len(children) >= 3 and sorted(children) == sorted(p["id"] for p in plan["nodes"])
    assert all(n.status is NodeStatus.SUCCEEDED for n in r.dag)
    # each ask became a subtask, and the root synthesized them (one synthesize call, for the root)
    tasks = [n.task for n in r.dag.children("root")]
    for ask in ("What grind size suits a French press?", "How do I filter tap water for brewing?"):
        assert ask in tasks
    calls = [(e["purpose"], e["node"]) for e in events(r) if e["type"] == "LLM_CALL"]
    assert ("synthesize", "root") in calls and ("decompose", "root") in calls
    paths = {c["path"] for c in r.citations}
    assert {"Roasting/Resting beans.md", "Water/Filtering tap water.md"} <= paths
    assert paths & {"Brewing/French press.md", "Brewing/Grind size.md"}
    assert_links_resolve(r.report.split("\n---\n", 1)[1], vault)


def test_history_holds_every_file_of_a_run(vault: Path) -> None:
    r = offline(MULTI, vault)
    h = r.history.dir
    assert h == vault / "Shad" / "History" / "Runs" / r.id
    for name in (
        "run.manifest.json",
        "events.jsonl",
        "dag.json",
        "metrics/nodes.jsonl",
        "metrics/summary.json",
        "replay/manifest.json",
        "final.report.md",
        "final.summary.json",
    ):
        assert (h / name).is_file(), name
    for folder in ("decisions", "errors", "artifacts"):
        assert (h / folder).is_dir(), folder

    manifest = read_json(h / "run.manifest.json")
    assert manifest["run_id"] == r.id and manifest["status"] == "SUCCESS"
    assert manifest["config"]["goal"] == MULTI

    evs = events(r)
    assert evs[0]["type"] == "RUN_STARTED" and evs[-1]["type"] == "RUN_FINISHED"
    assert [e["type"] for e in evs].count("RUN_STARTED") == 1
    assert evs[-1]["status"] == "SUCCESS"
    assert all(e["run_id"] == r.id for e in evs)
    for node in r.dag:
        kinds = [e["type"] for e in evs if e.get("node") == node.id and e["type"].startswith("NODE_")]
        assert kinds[0] == "NODE_CREATED" and kinds[-1] == "NODE_SUCCEEDED", (node.id, kinds)
        assert kinds.index("NODE_STARTED") < kinds.index("NODE_SUCCEEDED")
        assert kinds.count("NODE_STARTED") == 1 and kinds.count("NODE_SUCCEEDED") == 1
    # a node starts only once its hard dependencies have finished
    position = {(e["type"], e.get("node")): i for i, e in enumerate(evs)}
    for node in r.dag:
        for dep in node.hard_deps:
            assert position[("NODE_SUCCEEDED", dep)] < position[("NODE_STARTED", node.id)]

    dag = read_json(h / "dag.json")
    assert {n["id"] for n in dag["nodes"]} == {n.id for n in r.dag}
    rows = [json.loads(line) for line in (h / "metrics" / "nodes.jsonl").read_text("utf-8").splitlines()]
    assert sorted(row["node_id"] for row in rows) == sorted(n.id for n in r.dag)
    metrics = read_json(h / "metrics" / "summary.json")
    assert metrics["total_tokens"] == r.summary["metrics"]["total_tokens"] > 0

    replay = read_json(h / "replay" / "manifest.json")
    llm_events = [e for e in evs if e["type"] == "LLM_CALL"]
    assert len(replay["calls"]) == len(llm_events) == r.summary["metrics"]["llm_calls"]
    assert sorted((c["purpose"], c["node_id"]) for c in replay["calls"]) == sorted(
        (e["purpose"], e["node"]) for e in llm_events
    )
    assert sum(e["tokens"] for e in llm_events) == r.summary["metrics"]["total_tokens"]

    report = (h / "final.report.md").read_text("utf-8")
    assert report == r.report
    front = frontmatter(report)
    assert front["type"] == "report" and front["run_id"] == r.id and front["status"] == "SUCCESS"
    assert front["goal"] == MULTI and front["tokens"] == r.summary["metrics"]["total_tokens"]
    assert isinstance(front["wall_time_s"], (int, float)) and front["wall_time_s"] >= 0

    summary = read_json(h / "final.summary.json")
    assert summary == json.loads(json.dumps(r.summary))
    assert set(summary) >= SUMMARY_KEYS and set(summary["metrics"]) >= METRIC_KEYS
    assert summary["run_id"] == r.id and summary["goal"] == MULTI and summary["provider"] == "offline"
    assert Path(summary["report_path"]) == h / "final.report.md"
    assert summary["metrics"]["nodes_executed"] == len(r.dag) and summary["metrics"]["cache_hits"] == 0
    assert summary["missing_branches"] == [] and summary["failures"] == []
    assert summary["resume_command"] is None
    assert summary["citations"]
    for c in summary["citations"]:
        assert {"vault", "path", "heading", "resolved"} <= set(c)
        assert c["path"].endswith(".md") and not Path(c["path"]).is_absolute()
        assert (vault / c["path"]).is_file() and c["resolved"] is True and c["vault"] == vault.name


def test_a_second_vault_citation_names_its_vault(vault: Path, tmp_path: Path) -> None:
    other = tmp_path / "notes"
    (other / "Tea").mkdir(parents=True)
    (other / "Tea" / "Steeping.md").write_text(
        "# Steeping\n\n## Green tea\n\nSteep green tea for two minutes at 80 degrees; hotter water makes it "
        "bitter and astringent.\n",
        encoding="utf-8",
    )
    r = run(RunConfig("How long should I steep green tea?", (str(vault), str(other)), provider="offline"))
    assert r.status is RunStatus.SUCCESS
    tea = [c for c in r.citations if c["path"] == "Tea/Steeping.md"]
    assert tea and tea[0]["vault"] == "notes" and tea[0]["resolved"]
    assert "[[notes:Tea/Steeping#Green tea]]" in r.report
    links = re.findall(r"\[\[([^\]]+)\]\]", r.report.split("\n---\n", 1)[1])
    assert links and all(link.split(":", 1)[0] in ("notes", vault.name) for link in links)


# --- budgets and resume ----------------------------------------------------------------------------------


def test_a_budget_that_lets_only_the_plan_finish_prunes_the_root_too(vault: Path) -> None:
    # No subtask could be paid for: the root has nothing to synthesize because of the budget, so it is
    # stopped like them (resumable), not a failure with a traceback in the report.
    first = offline(MULTI, vault, max_tokens=6000)
    assert first.status is RunStatus.PARTIAL and first.exit_code == 3
    root = first.dag.node("root")
    assert root.status is NodeStatus.PRUNED
    assert all(n.status is NodeStatus.PRUNED for n in first.dag)
    assert "## Failures" not in first.report and "Traceback" not in first.report
    assert first.summary["resume_command"].startswith(f"shad resume {first.id} --budget +")
    assert resume(first.id, add_tokens=30_000).status is RunStatus.SUCCESS


def test_tiny_token_budget_stops_partial_and_resume_finishes_keeping_finished_nodes(vault: Path) -> None:
    first = offline(MULTI, vault, max_tokens=TINY)
    assert first.status is RunStatus.PARTIAL and first.exit_code == 3
    missing = {m["node_id"] for m in first.summary["missing_branches"]}
    assert missing and all(first.dag.node(m).status is NodeStatus.PRUNED for m in missing)
    assert all(m["reason"] for m in first.summary["missing_branches"])
    assert first.summary["resume_command"].startswith(
        f"shad resume {first.id} --budget +"
    )  # budget stopped it
    tail = [line for line in first.report.splitlines() if line.strip()][-2:]
    assert any(f"shad resume {first.id}" in line for line in tail), tail
    assert "## Missing branches" in first.report
    assert first.summary["metrics"]["total_tokens"] <= TINY  # within the budget, not past it

    done = {n.id: n.answer for n in first.dag if n.status.ok and not first.dag.children(n.id)}
    assert done, "the budget let nothing finish: the test needs a slightly larger one"
    events_before = (first.history.dir / "events.jsonl").read_text("utf-8")

    counting = Counting(get_provider("offline"))
    second = resume(first.id, add_tokens=30_000, provider=counting)
    assert second.id == first.id and second.history.dir == first.history.dir
    assert second.status is RunStatus.SUCCESS and second.exit_code == 0
    assert all(n.status.ok for n in second.dag)
    assert {n.id for n in second.dag} == {n.id for n in first.dag}
    for node_id, answer in done.items():  # kept as they were, and not asked again
        assert second.dag.node(node_id).answer == answer
        assert node_id not in {nid for _, nid in counting.calls}
    assert {nid for _, nid in counting.calls} >= missing
    # the same events.jsonl, continued
    events_after = (first.history.dir / "events.jsonl").read_text("utf-8")
    assert events_after.startswith(events_before)
    kinds = [e["type"] for e in events(second)]
    assert kinds.count("RUN_STARTED") == 1 and kinds.count("RUN_RESUMED") == 1
    assert kinds.count("RUN_FINISHED") == 2 and kinds[-1] == "RUN_FINISHED"
    assert read_json(first.history.dir / "final.summary.json")["status"] == "SUCCESS"


def test_resume_keeps_the_token_count_of_the_whole_run(vault: Path) -> None:
    first = offline(MULTI, vault, max_tokens=TINY)
    assert first.status is RunStatus.PARTIAL
    second = resume(first.id, add_tokens=30_000)
    charged = sum(e["tokens"] for e in events(second) if e["type"] == "LLM_CALL")
    assert second.summary["metrics"]["total_tokens"] == charged


def test_wall_time_exhaustion_stops_partial(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock the orchestrator reads jumps an hour after the first answer: no sleeping, no timing."""
    offset = [0.0]
    clock = types.SimpleNamespace(monotonic=lambda: time.monotonic() + offset[0], time=time.time)
    monkeypatch.setattr(orchestrator_module, "time", clock)
    monkeypatch.setattr(model_calls_module, "time", clock)  # where the clock is checked

    class Slow(Counting):
        async def complete(self, request: LLMRequest) -> LLMResponse:
            response = await super().complete(request)
            if request.purpose == "answer":
                offset[0] += 3600.0
            return response

    config = RunConfig(MULTI, (str(vault),), provider="offline", budgets=Budgets(max_wall_time=60.0))
    provider = Slow(get_provider("offline"))
    r = asyncio.run(start_run(config, provider=provider))
    assert r.status is RunStatus.PARTIAL and r.exit_code == 3
    assert "wall time" in (r.summary["stop_reason"] or "")
    assert [p for p, _ in provider.calls].count("answer") == 1
    assert r.summary["missing_branches"]
    assert any(e["type"] == "BUDGET_EXHAUSTED" for e in events(r))
    assert r.summary["resume_command"] == f"shad resume {r.id}"


# --- where history goes, and what later runs may cite ----------------------------------------------------


def test_history_dir_wins_over_the_vault(vault: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    r = offline(SIMPLE, vault, history_dir=str(elsewhere))
    assert r.history.dir == elsewhere / r.id
    assert (elsewhere / r.id / "final.summary.json").is_file()
    assert not (vault / "Shad").exists()


def test_later_runs_do_not_cite_earlier_reports_unless_asked(vault: Path) -> None:
    first = offline(SIMPLE, vault)
    assert (first.history.dir / "final.report.md").is_file()
    second = offline(SIMPLE, vault)
    assert second.citations
    assert not [c for c in second.citations if c["path"].startswith("Shad/History")]
    assert "[[Shad/History" not in second.report
    # the control: with include_history the earlier reports are found (so the check above can fail)
    third = offline(SIMPLE, vault, include_history=True)
    assert [c for c in third.citations if c["path"].startswith("Shad/History/")]


def test_earlier_reports_do_not_crowd_out_code_mode_retrieval(vault: Path) -> None:
    first = offline(SIMPLE, vault)
    if first.dag.root().retrieval["method"] != "codemode":
        pytest.skip("no sandbox here: direct retrieval")
    later = [offline(SIMPLE, vault) for _ in range(2)][-1]
    assert len(later.dag.root().retrieval["context"]) == len(first.dag.root().retrieval["context"])


# --- a real SDK against the fake server: model output is untrusted ---------------------------------------

PLAN = {
    "nodes": [
        {"id": "rest", "task": "How long should roasted beans rest?", "stage": "gather_evidence"},
        {"id": "grind", "task": "What grind size suits a French press?", "stage": "gather_evidence"},
    ]
}


def scripted_model(body: dict[str, Any]) -> str:
    """A well-behaved model: a JSON plan, answers that quote and cite the first context item, a synthesis
    that keeps every child's cited statements, a judge that finds every claim supported."""
    prompt = prompt_of(body)
    if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
        return json.dumps(PLAN)
    return well_behaved(prompt)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=scripted_model) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


def fast(status: int) -> Fault:
    """An HTTP error with a tiny retry-after, so retries do not wait."""
    return Fault("status", status=status, retry_after=0.01, text=f"scripted {status}; key was {KEY}")


PASS = Fault("pass")  # a request the fake server answers normally (a placeholder in a script)


def live(vault: Path, goal: str = TWO_PART, **options: Any) -> Run:
    """One request at a time, so scripted faults hit the calls the test means; direct retrieval (no
    script calls) unless ``code_mode=True``."""
    options.setdefault("max_llm", 1)
    options.setdefault("code_mode", False)
    options.setdefault("max_parallel", 1)
    config = RunConfig(goal, (str(vault),), provider="anthropic", **options)
    return asyncio.run(start_run(config))


def assert_no_key_anywhere(r: Run) -> None:
    leaked = [p for p in files_under(r.history.dir) if KEY in p.read_text("utf-8", errors="replace")]
    assert leaked == []
    assert KEY not in r.report and KEY not in json.dumps(r.summary)


def test_fake_server_run_succeeds_with_the_models_plan(vault: Path, server: FakeLLMServer) -> None:
    r = live(vault)
    assert r.status is RunStatus.SUCCESS and r.provider_name == "anthropic"
    assert {"rest", "grind"} <= {n.id for n in r.dag.children("root")}
    assert {c["path"] for c in r.citations} >= {"Roasting/Resting beans.md"}
    assert r.summary["metrics"]["total_tokens"] == server.reported_tokens > 0
    assert r.summary["metrics"]["llm_calls"] == server.count
    assert len(read_json(r.history.dir / "replay" / "manifest.json")["calls"]) == server.count
    assert_no_key_anywhere(r)


def test_a_models_synthesis_prompt_heads_each_subtask_with_its_own_words(
    vault: Path, server: FakeLLMServer
) -> None:
    # Subtasks that repeat the goal, as models (and the skeleton plans) often write them.
    # (not a strategy's own stage wording, "Define the key terms and scope of:", whose retrieval is the
    # goal's as the framing stage's is: that subtask is pruned as adding nothing new)
    asks = {"rest": "Find how long roasted beans rest for", "grind": "List the grind sizes for"}
    nodes = [{"id": k, "task": f"{v} {TWO_PART}", "stage": "gather_evidence"} for k, v in asks.items()]

    def model(body: dict[str, Any]) -> str:
        prompt = prompt_of(body)
        return json.dumps({"nodes": nodes}) if "Reply with JSON only" in prompt else well_behaved(prompt)

    server.set_reply(model)
    r = live(vault)
    assert r.status is RunStatus.SUCCESS
    prompts = [prompt_of(s.body or {}) for s in server.posts]
    synthesis = next(p for p in prompts if "Answers of the subtasks" in p)
    headings = re.findall(r"^## (.*)$", synthesis, re.M)
    # The strategy's own stages repeat the goal too ("Analyse the evidence on: <goal>").
    expected = {
        "frame_question": "Frame the question and the criteria for answering",
        "rest": "Find how long roasted beans rest",
        "grind": "List the grind sizes",
        "analyze": "Analyse the evidence",
    }
    children = [n.id for n in r.dag.children("root") if n.answer]
    assert {"rest", "grind"} <= set(children)
    assert headings == [expected[c] for c in children]
    assert not any(TWO_PART in h for h in headings)  # the goal is said at the top, not above each section
    assert "subtask's words" in synthesis  # and the model is asked to keep those headings


SCRIPT = """
hits = obsidian.search(TASK, limit=5)
context = []
for hit in hits[:3]:
    note = obsidian.read_note(hit["path"], vault=hit["vault"])
    context.append({"vault": hit["vault"], "path": hit["path"], "heading": None, "text": note["body"][:600],
                    "citation": obsidian.create_wikilink(hit["path"])})
__result__ = {"context": context, "citations": [], "queries": [TASK], "signals": {}, "confidence": 0.9,
              "why": "searched the task"}
"""
FABRICATED = """
__result__ = {"context": [{"vault": VAULT, "path": "Brewing/French press.md", "heading": None,
              "text": "Boil the beans in the press for an hour before grinding them.",
              "citation": "[[Brewing/French press]]"}],
              "citations": [], "queries": [], "signals": {}, "confidence": 0.99, "why": "made up"}
"""


def test_code_mode_runs_the_models_scripts_and_drops_fabricated_passages(
    vault: Path, server: FakeLLMServer
) -> None:
    def model(body: dict[str, Any]) -> str:
        prompt = prompt_of(body)
        if prompt.startswith("Write a Python retrieval script"):
            task = re.search(r"^Subtask: (.*)$", prompt, re.M)
            assert task is not None
            if "French press" in task.group(1):
                return "```python\n" + FABRICATED.replace("VAULT", json.dumps(vault.name)) + "```"
            return script_writing_model(body)
        return scripted_model(body)

    server.set_reply(model)
    r = live(vault, code_mode=True, max_llm=2, max_parallel=4)
    assert r.status is RunStatus.SUCCESS
    modes = [e for e in events(r) if e["type"] == "RETRIEVAL_MODE"]
    if modes[0]["mode"] != "codemode":
        pytest.skip(f"no sandbox here: {modes[0].get('reason')}")
    scripts = r.history.dir / "artifacts" / "scripts"
    assert (scripts / "rest-1.py").read_text("utf-8").strip().startswith("hits = obsidian.search(")
    rest = read_json(scripts / "rest-1.json")
    assert rest["result"]["context"] and rest["dropped"] == []
    assert r.dag.node("rest").retrieval["method"] == "codemode"
    grind = read_json(scripts / "grind-1.json")
    assert grind["dropped"] and "does not occur" in grind["dropped"][0]["reason"]
    assert r.dag.node("grind").retrieval["method"] == "codemode+direct"  # the recovery ladder's last rung
    assert "Boil the beans" not in r.report
    purposes = [c["purpose"] for c in read_json(r.history.dir / "replay" / "manifest.json")["calls"]]
    assert purposes.count("script") >= 3  # one per leaf, and the fabricating one regenerated once
    assert r.summary["metrics"]["total_tokens"] == server.reported_tokens
    assert_links_resolve(r.report.split("\n---\n", 1)[1], vault)


def test_prose_plan_gets_one_repair_then_the_skeleton_plan(vault: Path, server: FakeLLMServer) -> None:
    server.script(prose(), prose())
    r = live(vault)
    assert r.status in (RunStatus.SUCCESS, RunStatus.PARTIAL)
    purposes = [c["purpose"] for c in read_json(r.history.dir / "replay" / "manifest.json")["calls"]]
    assert purposes[:2] == ["decompose", "repair"] and purposes.count("repair") == 1
    assert [p.fault for p in server.posts][:3] == ["prose", "prose", None]
    plan = read_json(r.history.dir / "decisions" / "plan-root.json")
    assert plan["source"] == "default" and plan["problems"]
    assert not {"rest", "grind"} & {n.id for n in r.dag}  # the model's plan never arrived
    assert len(r.dag.children("root")) >= 2
    failure = next(f for f in r.summary["failures"] if f["phase"] == "decompose")
    assert failure["node_id"] == "root" and failure["fallback"] == "skeleton plan"
    assert "JSON" in failure["message"]
    assert r.dag.root().status is NodeStatus.SUCCEEDED
    assert r.summary["metrics"]["total_tokens"] == server.reported_tokens  # the unusable answers cost too


def test_a_rate_limit_slows_the_scheduler_down(vault: Path, server: FakeLLMServer) -> None:
    server.script(rate_limited(0.01))
    r = live(vault, max_llm=2, max_parallel=4)
    assert r.summary["metrics"]["llm_backoffs"] >= 1


def test_rate_limit_and_cut_stream_are_retried_and_every_attempt_is_charged(
    vault: Path, server: FakeLLMServer
) -> None:
    server.script(cut_stream(3), rate_limited(0.01))
    r = live(vault)
    assert r.status is RunStatus.SUCCESS
    assert [p.fault for p in server.posts][:3] == ["cut", "status", None]
    assert server.usage[0][0] > 0  # the cut stream had reported its input tokens
    assert r.summary["metrics"]["total_tokens"] == server.reported_tokens
    retried = [e for e in events(r) if e["type"] == "LLM_CALL" and e["retries"]]
    assert len(retried) == 1 and retried[0]["retries"] == 2 and retried[0]["purpose"] == "decompose"
    assert {"rest", "grind"} <= {n.id for n in r.dag}


def test_a_persistently_failing_answer_fails_its_node_only(vault: Path, server: FakeLLMServer) -> None:
    # decompose passes; then the first answer call fails on all 5 attempts (4 retries); the rest answer
    server.script(PASS, *[fast(500)] * 5)
    r = live(vault)
    assert r.status is RunStatus.PARTIAL and r.exit_code == 3
    failed = [n for n in r.dag if n.status is NodeStatus.FAILED]
    assert len(failed) == 1
    node = failed[0]
    assert node.id != "root" and r.dag.root().status is NodeStatus.SUCCEEDED
    assert {n.id for n in r.dag if n.status is NodeStatus.SUCCEEDED} == {n.id for n in r.dag} - {node.id}
    failure = next(f for f in r.summary["failures"] if f["node_id"] == node.id)
    assert failure["error_class"] == "ProviderError" and "500" in failure["message"]
    assert (r.history.dir / "errors" / f"{node.id}.json").is_file()
    section = r.report.split("## Failures", 1)[1]
    assert f"`{node.id}`" in section and failure["phase"] in section
    assert "ProviderError" in section and "500" in section
    assert node.id in {m["node_id"] for m in r.summary["missing_branches"]}
    assert r.summary["resume_command"] == f"shad resume {r.id}"
    assert r.summary["metrics"]["total_tokens"] == server.reported_tokens
    assert_no_key_anywhere(r)  # the server put the key into its error message


def test_a_failed_answer_call_is_reported_in_the_answer_phase(vault: Path, server: FakeLLMServer) -> None:
    server.script(PASS, *[fast(500)] * 5)
    r = live(vault)
    failure = next(f for f in r.summary["failures"] if f["error_class"] == "ProviderError")
    assert failure["phase"] in ("answer", "generate")


def test_refusal_and_empty_answers_fail_their_nodes_without_a_crash(
    vault: Path, server: FakeLLMServer
) -> None:
    server.script(PASS, refusal(), empty())
    r = live(vault)
    assert r.status is RunStatus.PARTIAL
    failed = [n for n in r.dag if n.status is NodeStatus.FAILED]
    assert len(failed) == 2 and r.dag.root().status is NodeStatus.SUCCEEDED
    messages = " ".join(f["message"] for f in r.summary["failures"])
    assert "refused" in messages and "empty" in messages
    assert (r.history.dir / "final.report.md").is_file() and "## Failures" in r.report
    assert_no_key_anywhere(r)


def test_an_empty_synthesis_keeps_what_the_subtasks_found(vault: Path, server: FakeLLMServer) -> None:
    def model(body: dict[str, Any]) -> str:
        return "" if "Answers of the subtasks" in prompt_of(body) else scripted_model(body)

    server.set_reply(model)
    r = live(vault)
    assert r.status is RunStatus.PARTIAL
    assert r.dag.root().status is NodeStatus.FAILED
    assert "[[Roasting/Resting beans" in r.report  # the children's findings are in the report
    assert r.citations


def test_a_citation_of_a_missing_note_is_flagged_never_kept_silently(
    vault: Path, server: FakeLLMServer
) -> None:
    def model(body: dict[str, Any]) -> str:
        text = scripted_model(body)
        if "Reply with JSON only" in prompt_of(body):
            return text
        return text + " Also [[Nowhere/Invented#Ghost]]."

    server.set_reply(model)
    r = live(vault)
    unresolved = r.summary["unresolved_citations"]
    assert unresolved and {u["path"] for u in unresolved} == {"Nowhere/Invented.md"}
    assert all(u["reason"] for u in unresolved)
    assert "## Unresolved citations" in r.report and "Nowhere/Invented" in r.report.split("## Unresolved")[1]
    body = r.report.split("\n---\n", 1)[1].split("## Unresolved")[0]
    assert "[[Nowhere/Invented#Ghost]] ⚠" in body  # flagged where it stands
    ghost = [c for c in r.citations if c["path"] == "Nowhere/Invented.md"]
    assert ghost and not any(c["resolved"] for c in ghost)
    assert all(c["resolved"] for c in r.citations if c["path"] != "Nowhere/Invented.md")


def test_a_model_echoing_the_api_key_leaves_no_trace_in_the_history(
    vault: Path, server: FakeLLMServer
) -> None:
    server.set_reply(lambda body: f"{scripted_model(body)} (my key is {KEY})")
    r = live(vault, goal=SIMPLE)
    assert r.status is RunStatus.SUCCESS
    files = list(files_under(r.history.dir))
    assert {"final.report.md", "final.summary.json", "dag.json", "manifest.json"} <= {p.name for p in files}
    assert [p for p in files if KEY in p.read_text("utf-8", errors="replace")] == []
    assert "[redacted]" in (r.history.dir / "final.report.md").read_text("utf-8").lower()


# --- replay ----------------------------------------------------------------------------------------------


def script_writing_model(body: dict[str, Any]) -> str:
    prompt = prompt_of(body)
    task = re.search(r"^Subtask: (.*)$", prompt, re.M)
    if prompt.startswith("Write a Python retrieval script") and task is not None:
        return "```python\n" + SCRIPT.replace("TASK", json.dumps(task.group(1))) + "```"
    return scripted_model(body)


@pytest.mark.parametrize("code_mode", [False, True], ids=["direct", "codemode"])
def test_replay_reproduces_a_recorded_run_without_any_request(
    vault: Path, server: FakeLLMServer, tmp_path: Path, code_mode: bool
) -> None:
    server.set_reply(script_writing_model)
    history = str(tmp_path / "history")
    recorded = live(vault, history_dir=history, max_llm=2, max_parallel=4, code_mode=code_mode)
    assert recorded.status is RunStatus.SUCCESS
    requests = server.count
    config = RunConfig(
        TWO_PART, (str(vault),), provider="anthropic", history_dir=history, code_mode=code_mode
    )
    replayed = asyncio.run(start_run(config, provider=ReplayProvider(recorded.history.dir)))
    assert server.count == requests  # not one request
    assert replayed.status is RunStatus.SUCCESS and replayed.provider_name == "replay", replayed.failures
    assert replayed.summary["failures"] == []
    assert [n.id for n in replayed.dag] == [n.id for n in recorded.dag]
    assert replayed.citations == recorded.citations
    assert replayed.dag.root().answer == recorded.dag.root().answer
    assert replayed.summary["metrics"]["total_tokens"] == recorded.summary["metrics"]["total_tokens"]


def test_replay_works_with_history_in_the_vault(vault: Path) -> None:
    recorded = offline(TWO_PART, vault)
    config = RunConfig(TWO_PART, (str(vault),), provider="offline")
    replayed = asyncio.run(start_run(config, provider=ReplayProvider(recorded.history.dir)))
    assert replayed.summary["failures"] == []
    assert replayed.citations == recorded.citations


# --- the Python API --------------------------------------------------------------------------------------


def test_python_api_run_and_arun(vault: Path) -> None:
    import engine

    assert engine.run is run and engine.arun is arun and engine.RunConfig is RunConfig
    r = run(SIMPLE, str(vault), provider="offline", max_tokens=20_000)
    assert isinstance(r, Run) and r.status is RunStatus.SUCCESS
    assert r.config.budgets.max_tokens == 20_000 and r.provider_name == "offline"
    r2 = asyncio.run(arun(RunConfig(SIMPLE, (str(vault),), provider="offline")))
    assert r2.status is RunStatus.SUCCESS and r2.id != r.id


def test_run_config_rejects_an_unknown_strategy(vault: Path) -> None:
    from engine.errors import ShadError

    with pytest.raises(ShadError) as info:
        RunConfig(SIMPLE, (str(vault),), strategy="bogus")
    assert info.value.exit_code == 2


def test_run_works_inside_a_running_event_loop(vault: Path) -> None:
    async def notebook_cell() -> Run:
        return run(RunConfig(SIMPLE, (str(vault),), provider="offline"))

    r = asyncio.run(notebook_cell())
    assert r.status is RunStatus.SUCCESS and r.citations


def test_on_event_sees_every_event_as_it_happens(vault: Path) -> None:
    seen: list[dict[str, Any]] = []
    r = run(SIMPLE, str(vault), provider="offline", on_event=seen.append)
    kept = [e["type"] for e in seen if e["type"] not in {k.value for k in LIVE_ONLY}]  # deltas: live only
    assert kept == [e["type"] for e in events(r)]


TWO_STEPS = {
    "nodes": [
        {"id": "rest", "task": "How long should roasted beans rest?", "stage": "gather_evidence"},
        {
            "id": "grind",
            "task": "What grind size suits a French press after that rest?",
            "stage": "gather_evidence",
            "depends_on": ["rest"],
        },
    ]
}


def test_a_dependent_subtasks_script_is_told_what_its_dependency_found(
    vault: Path, server: FakeLLMServer
) -> None:
    plan = TWO_STEPS
    scripts: dict[str, str] = {}

    def model(body: dict[str, Any]) -> str:
        prompt = prompt_of(body)
        if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
            return json.dumps(plan)
        if prompt.startswith("Write a Python retrieval script"):
            task = re.search(r"^Subtask: (.*)$", prompt, re.M)
            assert task is not None
            scripts[task.group(1)] = prompt
            return script_writing_model(body)
        return scripted_model(body)

    server.set_reply(model)
    r = live(vault, code_mode=True, max_llm=2, max_parallel=4)
    modes = [e for e in events(r) if e["type"] == "RETRIEVAL_MODE"]
    if modes[0]["mode"] != "codemode":
        pytest.skip(f"no sandbox here: {modes[0].get('reason')}")
    first_answer = " ".join(r.dag.node("rest").answer.split())
    assert first_answer
    dependent = scripts[plan["nodes"][1]["task"]]  # type: ignore[index]
    assert "builds on found" in dependent and f"- rest: {first_answer[:120]}" in dependent
    assert "builds on found" not in scripts[plan["nodes"][0]["task"]]  # type: ignore[index]


class OwnRetriever:
    """A retriever of one's own, written for ``retrieve(task, goal, node_id)`` (before ``findings``)."""

    def __init__(self, vault: Path) -> None:
        self.direct = DirectSearchRetriever(VaultSet([vault]))
        self.seen: list[str] = []

    async def retrieve(self, task: str, goal: str, node_id: str) -> RetrievalResult:
        self.seen.append(node_id)
        return await self.direct.retrieve(task, goal, node_id)


def test_a_retriever_of_ones_own_without_findings_still_serves_dependent_subtasks(
    vault: Path, server: FakeLLMServer
) -> None:
    server.set_reply(
        lambda body: json.dumps(TWO_STEPS) if "JSON only" in prompt_of(body) else scripted_model(body)
    )
    own = OwnRetriever(vault)
    config = RunConfig(TWO_PART, (str(vault),), provider="anthropic", max_llm=1, code_mode=False)
    r = asyncio.run(start_run(config, retriever=own))
    own.direct.vaults.close()
    assert r.status is RunStatus.SUCCESS and not r.summary["failures"]
    assert {"rest", "grind"} <= set(own.seen)
