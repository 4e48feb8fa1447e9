"""The node cache (engine/cache.py): keys, subset fingerprints, TTL policy, tiers — over a real SQLite
store — and what it does inside a run: an identical second run makes no model call, an edited note
re-executes exactly the nodes that read it."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO, write_vault
from _fake_llm import FakeLLMServer, prompt_of, well_behaved

from engine import RunConfig
from engine.runs import Run, start_run
from engine.runs.cache import DAY, MAIN_TTL, VOLATILE_TTL, NodeCache, fingerprint, parse_ttl
from engine.store import SQLiteStore
from engine.vault import VaultSet

KEY = "sk-ant-test-cache-0000000000000000"
NOTES = {
    "Roasting/Resting.md": "# Resting\nRoasted beans rest for three to five days so CO2 escapes.\n",
    "Brewing/French press.md": "# French press\nA French press wants a coarse grind and four minutes.\n",
    "Brewing/Espresso.md": "# Espresso\nEspresso needs a fine grind and nine bar of pressure.\n",
    "Inbox/Idea.md": "# Idea\nTry a longer rest for the espresso roast.\n",
}
PLAN = {
    "nodes": [
        {"id": "rest", "task": "How long should roasted beans rest?", "stage": "gather_evidence"},
        {"id": "grind", "task": "What grind size suits a French press?", "stage": "gather_evidence"},
    ]
}
GOAL = "How long should roasted beans rest, and what grind size suits a French press?"


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    return write_vault(tmp_path / "vault", dict(NOTES))


@pytest.fixture
def demo_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    return Path(shutil.copytree(DEMO, tmp_path / "demo"))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "store.sqlite3")
    yield s
    s.close()


def model(body: dict[str, Any]) -> str:
    """A well-behaved model: a JSON plan; answers that quote and cite the context; a synthesis that
    keeps its children's citations."""
    prompt = prompt_of(body)
    if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
        return json.dumps(PLAN)
    return well_behaved(prompt)  # cited quotes, a synthesis keeping them, a judge that agrees


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=model) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


def live(vault: Path, store: SQLiteStore, tmp_path: Path, **options: Any) -> Run:
    options.setdefault("code_mode", False)
    options.setdefault("max_llm", 1)
    config = RunConfig(
        GOAL, (str(vault),), provider="anthropic", history_dir=str(tmp_path / "runs"), **options
    )
    return asyncio.run(start_run(config, store=store))


def events(run: Run, kind: str) -> list[dict[str, Any]]:
    return [e for e in run.events if e["type"] == kind]


# --- pieces --------------------------------------------------------------------------------------------


def test_keys_follow_the_hierarchical_layout_and_depend_on_every_input() -> None:
    base = {"strategy": "research", "purpose": "answer", "stage": "gather_evidence", "tier": "worker"}
    key = NodeCache.key(task="How long?", context={"goal": "g"}, **base)
    goal_type, intent, entities, context_hash = key.split(":")
    assert goal_type == "research" and intent == "answer.gather_evidence.worker"
    assert len(entities) == 16 and len(context_hash) == 24
    assert NodeCache.key(task="how   LONG?", context={"goal": "g"}, **base) == key  # spacing and case fold
    assert NodeCache.key(task="How long?", context={"goal": "h"}, **base) != key
    assert NodeCache.key(task="How short?", context={"goal": "g"}, **base) != key
    assert NodeCache.key(task="How long?", context={"goal": "g"}, **{**base, "tier": "leaf"}) != key


def test_fingerprint_is_order_free_and_content_sensitive() -> None:
    a, b = ("/v", "A.md", "h1"), ("/v", "B.md", "h2")
    assert fingerprint([a, b]) == fingerprint([b, a])
    assert fingerprint([a, b]) != fingerprint([a, ("/v", "B.md", "h3")])
    assert fingerprint([]) != fingerprint([a])


def test_parse_ttl() -> None:
    assert parse_ttl("30d") == 30 * DAY
    assert parse_ttl("12h") == 12 * 3600
    assert parse_ttl("90m") == 5400
    assert parse_ttl("45") == 45
    with pytest.raises(ValueError, match="not a duration"):
        parse_ttl("soon")


def test_lookup_hits_until_a_used_note_changes(vault: Path, store: SQLiteStore) -> None:
    vaults = VaultSet([vault])
    vaults.refresh()
    cache = NodeCache(store, vaults, run_id="r1")
    vid = vaults.ids[0]
    notes = cache.notes_used([{"vault": vid, "path": "Roasting/Resting.md"}])
    assert notes[0][0] == str(vault.resolve()) and len(notes[0][2]) == 64
    cache.save("k1", {"answer": "rest 3-5 days"}, notes, verified=True)
    found = cache.lookup("k1")
    assert found.hit and found.tier == "main" and found.value is not None
    assert found.value["answer"] == "rest 3-5 days"
    # an unrelated note changing does not matter ...
    (vault / "Brewing/Espresso.md").write_text("# Espresso\nNow with nine and a half bar.\n", "utf-8")
    vaults.refresh()
    assert cache.lookup("k1").hit
    # ... the used one does
    (vault / "Roasting/Resting.md").write_text("# Resting\nOne week, says the new roaster.\n", "utf-8")
    vaults.refresh()
    stale = cache.lookup("k1")
    assert not stale.hit and stale.reason == "stale"
    assert (cache.hits, cache.misses, cache.stale) == (2, 1, 1)
    assert cache.changed(notes) == [f"{vault.resolve()}/Roasting/Resting.md"]


def test_tiers_and_ttls(vault: Path, store: SQLiteStore) -> None:
    vaults = VaultSet([vault])
    vaults.refresh()
    root = str(vault.resolve())
    cache = NodeCache(store, vaults, run_id="r1", vault_ttls={vault.name: 3600})
    plain = [(root, "Brewing/Espresso.md", "h")]
    assert cache.ttl(plain, "main") == 3600  # the vault's own TTL is shorter than 30 days
    assert NodeCache(store, vaults, run_id="r").ttl(plain, "main") == MAIN_TTL
    assert NodeCache(store, vaults, run_id="r").ttl([(root, "Inbox/Idea.md", "h")], "main") == VOLATILE_TTL
    assert cache.save("provisional", {"answer": "?"}, plain, verified=False) == "staging"
    found = cache.lookup("provisional")
    assert found.tier == "staging"
    assert store.cache_promote("provisional", ttl=MAIN_TTL)
    assert cache.lookup("provisional").tier == "main"


def test_disabled_and_refresh(vault: Path, store: SQLiteStore) -> None:
    vaults = VaultSet([vault])
    vaults.refresh()
    NodeCache(store, vaults, run_id="r").save("k", {"answer": "a"}, [], verified=True)
    off = NodeCache(store, vaults, run_id="r", enabled=False)
    assert off.lookup("k").reason == "disabled" and off.save("k2", {}, [], verified=True) is None
    refreshing = NodeCache(store, vaults, run_id="r", refresh=True)
    assert refreshing.lookup("k").reason == "refresh"
    refreshing.save("k", {"answer": "b"}, [], verified=True)
    value = NodeCache(store, vaults, run_id="r").lookup("k").value
    assert value is not None and value["answer"] == "b"


def test_expired_entries_miss(vault: Path, store: SQLiteStore) -> None:
    vaults = VaultSet([vault])
    vaults.refresh()
    cache = NodeCache(store, vaults, run_id="r", vault_ttls={vault.name: 0.2})
    cache.save("k", {"answer": "a"}, [(str(vault.resolve()), "Brewing/Espresso.md", "x")], verified=True)
    time.sleep(0.4)
    assert cache.lookup("k").reason == "miss"


# --- inside runs ----------------------------------------------------------------------------------------


def test_identical_second_run_makes_no_model_call(
    vault: Path, store: SQLiteStore, server: FakeLLMServer, tmp_path: Path
) -> None:
    first = live(vault, store, tmp_path)
    calls = server.count
    assert first.status.value == "SUCCESS" and calls >= 4  # plan, two answers, a synthesis
    second = live(vault, store, tmp_path)
    assert server.count == calls  # not one request more
    assert (
        second.report.split("\n---\n", 1)[-1].split("## Run")[0]
        == (first.report.split("\n---\n", 1)[-1].split("## Run")[0])
    )
    assert second.citations == first.citations
    metrics = second.summary["metrics"]
    hits = events(second, "NODE_CACHE_HIT")
    assert metrics["cache_hits"] == len(hits) + len(events(second, "PLAN_CACHE_HIT"))
    assert len(hits) == len(second.dag) and events(second, "PLAN_CACHE_HIT")
    assert metrics["cache_misses"] == 0 and metrics["llm_calls"] == 0 and metrics["total_tokens"] == 0
    assert {e["key"] for e in events(second, "NODE_CACHE_HIT")} >= {
        n.cache_key for n in second.dag if n.cache_key
    }
    # the recording of the cached run still holds every call, so it can be replayed
    manifest = json.loads((second.history.dir / "replay" / "manifest.json").read_text("utf-8"))
    assert len(manifest["calls"]) == calls and all(c["origin"].startswith("cache") for c in manifest["calls"])


def test_editing_one_note_reexecutes_exactly_its_readers(
    demo_copy: Path, store: SQLiteStore, server: FakeLLMServer, tmp_path: Path
) -> None:
    vault = demo_copy
    first = live(vault, store, tmp_path)
    leaves = {n.id for n in first.dag if not first.dag.children(n.id)}
    readers_of: dict[str, set[str]] = {}
    for n in first.dag:
        if n.id in leaves:
            for _, path, _ in n.retrieval.get("notes", []):
                readers_of.setdefault(path, set()).add(n.id)
    # the note read by the fewest leaves (but by some): editing it must leave the other leaves alone
    note, leaves_reading = min(readers_of.items(), key=lambda kv: (len(kv[1]), kv[0]))
    assert leaves_reading != leaves
    target = vault / note
    target.write_text(target.read_text("utf-8") + "\nAn edit after the first run.\n", "utf-8")
    before = server.count
    second = live(vault, store, tmp_path)
    missed = {e["node"] for e in events(second, "NODE_CACHE_MISS")}
    ancestors = set()
    for leaf in leaves_reading:
        parent = second.dag.node(leaf).parent
        while parent is not None:
            ancestors.add(parent)
            parent = second.dag.node(parent).parent
    assert missed == leaves_reading | ancestors
    assert {e["node"] for e in events(second, "NODE_CACHE_HIT")} == {n.id for n in second.dag} - missed
    # one model call per re-executed node, and the root's batched support check of its claims
    assert server.count - before == len(missed) + ("root" in missed)
    assert second.summary["metrics"]["stale_nodes"] == len(missed)  # the syntheses above read it too


def test_no_cache_and_refresh_cache(
    vault: Path, store: SQLiteStore, server: FakeLLMServer, tmp_path: Path
) -> None:
    live(vault, store, tmp_path)
    calls = server.count
    uncached = live(vault, store, tmp_path, use_cache=False)
    assert server.count == 2 * calls and not events(uncached, "NODE_CACHE_HIT")
    assert not events(uncached, "NODE_CACHE_MISS")  # the cache was not consulted at all
    refreshed = live(vault, store, tmp_path, refresh_cache=True)
    assert server.count == 3 * calls
    assert {e["reason"] for e in events(refreshed, "NODE_CACHE_MISS")} == {"refresh"}
    live(vault, store, tmp_path)
    assert server.count == 3 * calls  # what the refresh wrote is what the next run reads
