"""Software runs with no model (the offline provider): the manifest comes from the vault's titled code
blocks, each file citing its note, the same checks run, and the report says plainly that no model wrote
the code. What cannot be done (no code in the vault, files that exist) leaves the run PARTIAL with the
reason and the next command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

from engine import RunConfig, run
from engine.output import Manifest
from engine.runs import RunStatus
from engine.vault import Vault

pytestmark = pytest.mark.usefixtures("shad_home")

GOAL = "Build a Python package with a command-line tool that computes coffee brew ratios"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO, tmp_path / "vault"))


def software(vault: Path, **options: Any) -> Any:
    return run(RunConfig(GOAL, (str(vault),), provider="offline", strategy="software", **options))


def test_the_manifest_is_copied_from_the_vaults_code_notes_and_checked(vault: Path) -> None:
    r = software(vault)
    assert r.status is RunStatus.SUCCESS, r.summary["failures"]
    manifest = Manifest.load(r.history.dir / "artifacts" / "manifest.json")
    by_path = {f.path: f for f in manifest.files}
    assert {"brewcalc/models.py", "brewcalc/ratios.py", "brewcalc/cli.py", "tests/test_ratios.py"} <= set(
        by_path
    )
    # contracts first: the types come from the contracts node, the code from the implementation node
    assert by_path["brewcalc/models.py"].source_nodes[0] == "types_contracts"
    assert by_path["brewcalc/ratios.py"].source_nodes[0] == "implementation"
    assert by_path["tests/test_ratios.py"].source_nodes[0] == "verification"
    for f in manifest.files:  # every copied file cites the one note that holds it, word for word
        if f.path in ("TEST_PLAN.md", "tests/test_contracts.py"):
            continue  # Shad's own stubs, from the contracts
        (note,) = f.source_notes
        body = (vault / (note.strip("[]") + ".md")).read_text(encoding="utf-8")
        assert f.content.strip() in body
    software_summary = r.summary["software"]
    assert software_summary["model_written"] is False and software_summary["ok"] is True
    assert software_summary["checks"] == {"syntax": "pass", "imports": "pass", "integrity": "pass"}
    assert "No language model wrote this code" in r.report
    assert "[[Code/Brew calculator types]]" in r.report
    assert any(c["path"] == "Code/Brew calculator types.md" for c in r.summary["citations"])
    index = json.loads((r.history.dir / "artifacts" / "export_index.json").read_text())
    assert {"symbol": "Recipe", "from": "brewcalc/models.py", "type": "class"} in index["exports"]


def test_tests_off_writes_no_tests_and_verify_off_checks_nothing(vault: Path) -> None:
    r = software(vault, tests="off", verify="off")
    paths = {f.path for f in Manifest.load(r.history.dir / "artifacts" / "manifest.json").files}
    assert paths and not any(p.startswith("tests/") or p == "TEST_PLAN.md" for p in paths)
    assert not (r.history.dir / "artifacts" / "verify.json").exists()
    assert r.summary["software"]["ok"] is None and "Not checked" in r.report
    assert not [e for e in r.events if e["type"] == "NODE_CHECKED"]


def test_a_vault_without_code_notes_is_partial_and_says_why(vault: Path) -> None:
    shutil.rmtree(vault / "Code")
    r = software(vault)
    assert r.status is RunStatus.PARTIAL
    messages = " ".join(f["message"] for f in r.summary["failures"])
    assert "no code was produced" in messages and 'title="pkg/x.py"' in messages
    assert "Next: add pattern notes" in r.report
    assert r.summary["software"]["files"] == 0


def test_existing_files_are_kept_without_overwrite_and_the_run_says_so(vault: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "brewcalc").mkdir(parents=True)
    (out / "brewcalc" / "cli.py").write_text("# mine\n")
    r = software(vault, write_files=True, output=str(out))
    assert (out / "brewcalc" / "cli.py").read_text() == "# mine\n"
    assert (out / "brewcalc" / "models.py").exists()
    assert r.status is RunStatus.PARTIAL
    assert "existing file(s) kept" in " ".join(f["message"] for f in r.summary["failures"])
    again = software(vault, write_files=True, output=str(out), overwrite=True)
    assert again.status is RunStatus.SUCCESS
    assert (out / "brewcalc" / "cli.py").read_text() != "# mine\n"


def test_code_notes_are_found_through_the_links_of_the_notes_the_goal_finds(tmp_path: Path) -> None:
    from _demo import write_vault

    vault = write_vault(
        tmp_path / "links",
        {
            "Patterns/Greeting package.md": "# Greeting package\n\nBuild a Python greeting package: "
            "the code is in [[Patterns/Zq]].\n",
            "Patterns/Zq.md": '# Zq\n\n```js title="gx/core.js"\nexport const h = 1;\n```\n',
        },
    )
    goal = "Build a Python greeting package"  # a two-note vault scores low: approve its checkpoints
    r = run(RunConfig(goal, (str(vault),), provider="offline", strategy="software", checkpoints="approve"))
    files = {f.path: f for f in Manifest.load(r.history.dir / "artifacts" / "manifest.json").files}
    assert files["gx/core.js"].source_notes == ("[[Patterns/Zq]]",)
    assert "Patterns/Zq.md" not in {h.path for h in Vault(vault).search(goal)}
