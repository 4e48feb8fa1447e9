"""A software run end to end against the local stand-in model server (the real ``anthropic`` SDK on
loopback): contracts first, an implementation with planted faults — a syntax error, an import of a symbol
no file exports, a type error, a ``../`` path — and tests with a failing one. Each fault is caught, the
repairable ones are repaired (locally, or by reconciling the contracts), every attempt is in the history,
and under ``strict`` the final package passes every check and is written under ``--output`` only."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO
from _fake_llm import FakeLLMServer, prompt_of

from engine import RunConfig
from engine.output import Manifest
from engine.runs import RunStatus, start_run
from engine.verify import verify_path

pytestmark = pytest.mark.usefixtures("shad_home")

GOAL = "Build a Python package that totals an order of items, with tests"
KEY = "sk-ant-test-software-0000"
PLAN = {
    "nodes": [
        {"id": "req", "task": "Clarify what an order total must do", "stage": "clarify_requirements"},
        {"id": "layout", "task": "Lay out the package", "stage": "project_layout", "depends_on": ["req"]},
        {
            "id": "contracts",
            "task": "Define the order types",
            "stage": "types_contracts",
            "depends_on": ["layout"],
        },
        {
            "id": "impl",
            "task": "Implement the totals",
            "stage": "implementation",
            "depends_on": ["contracts"],
        },
        {"id": "check", "task": "Test the totals", "stage": "verification", "depends_on": ["impl"]},
    ]
}


def block(path: str, code: str) -> str:
    return f'```python title="{path}"\n{code.strip()}\n```\n'


MODELS = '''
"""The order's types."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    name: str
    price: int
    qty: int
'''
MODELS_RECONCILED = (
    MODELS
    + """

@dataclass(frozen=True)
class Discount:
    percent: int
"""
)
CORE_FAULTY = '''
"""Totals."""

from pkg.models import Discount, Item


def total(items: list[Item], discount: Discount | None = None) -> int:
    gross = sum(i.price * i.qty for i in items)
    return gross if discount is None else gross * (100 - discount.percent) // 100


def label(item: Item) -> int:
    return item.name
'''
CORE_FIXED = CORE_FAULTY.replace("def label(item: Item) -> int:", "def label(item: Item) -> str:")
FMT_FAULTY = '''
"""Formatting."""


def money(cents: int) -> str
    return f"{cents / 100:.2f}"
'''
FMT_FIXED = FMT_FAULTY.replace("-> str\n", "-> str:\n")
TESTS_FAULTY = """
from pkg.core import total
from pkg.models import Item


def test_total_of_two_items() -> None:
    assert total([Item("a", 2, 3), Item("b", 1, 1)]) == 8
"""
TESTS_FIXED = TESTS_FAULTY.replace("== 8", "== 7")


class Model:
    """The scripted model: replies by what the prompt asks; records what it was asked to repair."""

    def __init__(self) -> None:
        self.repairs: list[str] = []
        self.reconciles = 0
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> str:
        self.calls += 1
        prompt = prompt_of(body)
        if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
            return json.dumps(PLAN)
        if "Answers of the subtasks" in prompt:
            return "The package follows the vault's patterns. " + " ".join(
                dict.fromkeys(re.findall(r"\[\[[^\]]+\]\]", prompt))
            )
        if prompt.startswith("Checks failed"):
            failures = prompt.split("The files involved:")[0]
            self.repairs.append(failures)
            out = ""
            if "pkg/fmt.py" in failures:
                out += block("pkg/fmt.py", FMT_FIXED)
            if "pkg/core.py" in failures:
                out += block("pkg/core.py", CORE_FIXED)
            if "tests/test_core.py" in failures:
                out += block("tests/test_core.py", TESTS_FIXED)
            return out or "I cannot see what to fix."
        if "Your part (contracts)" in prompt:
            return block("pkg/__init__.py", '"""Orders."""') + block("pkg/models.py", MODELS)
        if "Your part (reconcile)" in prompt:
            self.reconciles += 1
            return block("pkg/models.py", MODELS_RECONCILED)
        if "Your part (implementation)" in prompt:
            return (
                block("pkg/core.py", CORE_FAULTY)
                + block("pkg/fmt.py", FMT_FAULTY)
                + block("../evil.py", 'print("outside")')
                + "```contract_change_request\nAdd a Discount type with a percent to pkg.models\n```\n"
            )
        if "Your part (tests)" in prompt:
            return block("tests/test_core.py", TESTS_FAULTY)
        links = re.findall(r"^\[\[[^\]]+\]\]$", prompt, re.MULTILINE)
        return "The vault shows the pattern. " + (links[0] if links else "")


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[Model]:
    scripted = Model()
    with FakeLLMServer(reply=scripted) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield scripted


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO, tmp_path / "vault"))


def software_run(vault: Path, **options: Any) -> Any:
    options.setdefault("code_mode", False)
    config = RunConfig(GOAL, (str(vault),), provider="anthropic", strategy="software", **options)
    return asyncio.run(start_run(config))


def events(r: Any, kind: str) -> list[dict[str, Any]]:
    return [e for e in r.events if e["type"] == kind]


def test_planted_faults_are_caught_repaired_and_the_package_passes_strict(
    vault: Path, model: Model, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    r = software_run(vault, verify="strict", write_files=True, output=str(out))
    software = r.summary["software"]
    # every check of strict passes on the final package, and the run says so
    assert software["ok"] is True, r.report
    assert set(software["checks"]) == {"syntax", "imports", "integrity", "types", "tests", "lint"}
    assert set(software["checks"].values()) == {"pass"}
    assert r.status is RunStatus.SUCCESS, r.summary["failures"]
    # each planted fault was caught: the syntax error and the unsafe path at the implementation's own
    # check, the missing symbol as a contract change, the type error and the failing test at strict
    repaired = " ".join(model.repairs)
    assert "[syntax] pkg/fmt.py" in repaired
    assert "[type] pkg/core.py" in repaired
    assert "[test] tests/test_core.py" in repaired
    assert model.reconciles == 1
    manifest = Manifest.load(r.history.dir / "artifacts" / "manifest.json")
    paths = {f.path for f in manifest.files}
    assert "../evil.py" not in paths
    assert any(n.kind == "dropped" and "../evil.py" in n.detail for n in manifest.notes)
    assert any(n.kind == "contract_change_reconciled" and "Discount" in n.detail for n in manifest.notes)
    models = next(f for f in manifest.files if f.path == "pkg/models.py")
    assert "class Discount" in models.content and models.source_nodes[0] == "contracts"
    assert {"pkg/core.py", "pkg/fmt.py", "tests/test_core.py", "tests/test_contracts.py"} <= paths
    # every attempt is in the history, and the events tell the same story
    repairs = json.loads((r.history.dir / "artifacts" / "repairs.json").read_text())
    assert {e["error_class"] for e in repairs} >= {"syntax", "type", "test", "integrity"}
    assert all(e.get("outcome") == "fixed" for e in repairs if e["scope"] == "local"), json.dumps(
        repairs, indent=1
    )
    assert len(list((r.history.dir / "artifacts" / "repairs").glob("*.json"))) >= 3
    outcomes = {(e["node"], e["error_class"], e["outcome"]) for e in events(r, "CODE_REPAIRED")}
    assert ("impl", "syntax", "fixed") in outcomes and ("check", "test", "fixed") in outcomes
    checked = {e["node"]: e["status"] for e in events(r, "NODE_CHECKED")}
    assert checked["impl"] == "pass" and checked["check"] == "pass"
    # the report lists the files with the nodes they came from, and the checks
    assert "## Files" in r.report and "`pkg/core.py` | python" in r.report
    assert "## Checks (strict: pass)" in r.report
    # written under --output and nowhere else; the written package checks clean on its own
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(paths)
    assert not (tmp_path / "evil.py").exists()
    assert verify_path(out, "strict").ok


def test_without_repairs_the_faults_are_reported_and_nothing_is_written(
    vault: Path, model: Model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model that never repairs anything: the faults stay, the run is PARTIAL and says which checks fail.
    monkeypatch.setattr(Model, "__call__", _never_repairs(Model.__call__))
    out = tmp_path / "out"
    r = software_run(vault, verify="build", write_files=True, output=str(out))
    software = r.summary["software"]
    assert software["ok"] is False
    assert software["checks"]["syntax"] == "fail" and software["checks"]["types"] == "fail"
    assert r.status is RunStatus.PARTIAL
    messages = " ".join(f["message"] for f in r.summary["failures"])
    assert "fails its blocking checks" in messages and "not written" in messages
    assert not out.exists() or not any(out.iterdir())
    outcomes = [e["outcome"] for e in events(r, "CODE_REPAIRED") if e["scope"] == "local"]
    assert "repeated" in outcomes or "refused" in outcomes  # the loop stopped by itself
    assert "Findings:" in r.report and "pkg/fmt.py" in r.report


def _never_repairs(call: Any) -> Any:
    def reply(self: Model, body: dict[str, Any]) -> str:
        if prompt_of(body).startswith("Checks failed"):
            self.repairs.append(prompt_of(body))
            return "I looked and everything seems fine."
        return str(call(self, body))

    return reply


def test_a_replay_rebuilds_the_same_manifest_without_the_model(vault: Path, model: Model) -> None:
    from engine.runs import replay

    first = software_run(vault, verify="basic")
    asked = model.calls
    again = replay(first.id)
    assert again.status is first.status and again.provider_name == "replay"
    assert model.calls == asked > 0  # nothing went to the model

    def files(r: Any) -> dict[str, str]:
        m = Manifest.load(r.history.dir / "artifacts" / "manifest.json")
        return {f.path: f.hash for f in m.files}

    assert files(again) == files(first)
