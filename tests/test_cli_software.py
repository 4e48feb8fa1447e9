"""``shad run``'s software options (--verify, --block-on, --warn-only, --tests, --write-files, --output,
--overwrite) reach the run's config, or fail as usage errors before any run starts; ``shad export`` of a
software run writes its manifest's code into DIR through the safe writer, and nothing outside it."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _cli import Result, caller
from rich.console import Console

from engine import Budgets, Run, RunConfig, run
from engine.cli._live import HANDLED, LiveTree
from engine.config import VERIFY_LEVELS
from engine.events import CodeProduced, EventKind, NodeChecked, NodeCreated, to_record
from engine.output import Manifest, ManifestFile

pytestmark = pytest.mark.usefixtures("shad_home")

GOAL = "How long should roasted beans rest before brewing?"
PROVIDER_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SHAD_REPLAY")


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*PROVIDER_ENV, "SHAD_DEBUG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def vault(tmp_path: Path, demo_vault: Path) -> Path:
    target = tmp_path / "vault"
    shutil.copytree(demo_vault, target)
    return target


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Any:
    return caller(capsys)


def one_line_error(result: Result, *needles: str) -> None:
    assert result.code == 2, (result.code, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("shad: error:"), result.err
    assert "Traceback" not in result.err + result.out and result.out == ""
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def config_of(summary: dict[str, Any]) -> dict[str, Any]:
    manifest = json.loads(Path(summary["history_dir"], "run.manifest.json").read_text("utf-8"))
    config: dict[str, Any] = manifest["config"]
    return config


# --- shad run: the options reach RunConfig ----------------------------------------------------------------


def test_every_software_option_reaches_the_run_config(shad: Any, vault: Path, tmp_path: Path) -> None:
    out = tmp_path / "code"
    r = shad(
        "run", GOAL, "--vault", str(vault), "--provider", "offline", "--max-nodes", "1",
        "--verify", "strict", "--tests", "off", "--block-on", "lint", "--block-on", "types,imports",
        "--warn-only", "tests", "--write-files", "--output", str(out), "--overwrite", "--json",
    )  # fmt: skip
    assert r.code in (0, 3), r.err
    config = config_of(r.json())
    assert config["verify"] == "strict" and config["tests"] == "off"
    assert config["block_on"] == ["lint", "types", "imports"] and config["warn_only"] == ["tests"]
    assert config["write_files"] is True and config["overwrite"] is True
    assert config["output"] == str(out.resolve())


def test_the_defaults_stay_the_engines(shad: Any, vault: Path) -> None:
    r = shad("run", GOAL, "--vault", str(vault), "--provider", "offline", "--max-nodes", "1", "--json")
    assert r.code == 0, r.err
    config = config_of(r.json())
    defaults = RunConfig(GOAL, (str(vault),))
    for name in ("verify", "tests", "write_files", "output", "overwrite"):
        assert config[name] == getattr(defaults, name), name
    assert config["block_on"] == [] and config["warn_only"] == []


def test_the_seeds_aliases_are_accepted_and_resolved(shad: Any, vault: Path) -> None:
    r = shad(
        "run", GOAL, "--vault", str(vault), "--provider", "offline", "--max-nodes", "1",
        "--block-on", "typecheck,unit_tests", "--warn-only", "import_resolution,manifest", "--json",
    )  # fmt: skip
    assert r.code == 0, r.err
    config = config_of(r.json())
    assert config["block_on"] == ["types", "tests"] and config["warn_only"] == ["imports", "integrity"]


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--write-files"], ["--write-files", "--output DIR"]),
        (["--output", "OUT"], ["--output", "without --write-files"]),
        (["--block-on", "bogus"], ["--block-on", "bogus", "syntax, imports, integrity, types, tests, lint"]),
        (["--warn-only", "lint,nonsense"], ["--warn-only", "nonsense", "syntax, imports"]),
        (["--block-on", "lint", "--warn-only", "lint"], ["lint", "both"]),
        (["--verify", "paranoid"], ["--verify", "paranoid"]),
        (["--tests", "never"], ["--tests", "never"]),
    ],
)
def test_bad_software_options_exit_2_before_a_run_starts(
    shad: Any, vault: Path, tmp_path: Path, shad_home: Path, args: list[str], needles: list[str]
) -> None:
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    r = shad("run", GOAL, "--vault", str(vault), "--provider", "offline", *args)
    one_line_error(r, *needles)
    assert not (shad_home / "runs.jsonl").exists()
    assert not (vault / "Shad").exists() and not (tmp_path / "out").exists()


def test_the_cli_knows_the_checkers_levels() -> None:
    from engine.verify import LEVELS

    assert tuple(VERIFY_LEVELS) == tuple(LEVELS)


def test_run_help_lists_the_software_options(shad: Any) -> None:
    r = shad("run", "--help")
    assert r.code == 0
    text = " ".join(r.out.split())
    for option in (
        "--verify",
        "--block-on",
        "--warn-only",
        "--tests",
        "--write-files",
        "--output",
        "--overwrite",
    ):
        assert option in text, option
    assert "[default: basic]" in text
    assert "Nothing is written unless --write-files --output DIR." in text


# --- the live tree: a node's files and checks ------------------------------------------------------------


def test_the_live_tree_shows_files_and_checks_next_to_a_node() -> None:
    assert EventKind.NODE_CHECKED in HANDLED and EventKind.CODE_PRODUCED in HANDLED
    tree = LiveTree()
    tree.apply(to_record(NodeCreated(node="root", task="build it", stage="", parent=None), "r1", 1.0))
    tree.apply(to_record(CodeProduced(node="root", step="contracts", files=["a.py", "b.py"]), "r1", 2.0))
    tree.apply(to_record(CodeProduced(node="root", step="tests", files=["test_a.py"]), "r1", 3.0))
    assert tree.notes == {"root": "+3 files"}
    checked = NodeChecked(node="root", level="basic", status="fail", findings=2, checks={"syntax": "fail"})
    tree.apply(to_record(checked, "r1", 4.0))
    assert tree.notes == {"root": "+3 files · checks ✗ 2"}
    passed = NodeChecked(node="root", level="basic", status="pass", findings=0, checks={"syntax": "pass"})
    tree.apply(to_record(passed, "r1", 5.0))
    assert tree.notes["root"] == "+3 files · checks ✓"
    console = Console(width=120, file=io.StringIO())
    console.print(tree.render())
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "root" in text and "build it" in text and "+3 files · checks ✓" in text


# --- shad export of a software run -----------------------------------------------------------------------


def software_run(vault: Path, files: list[ManifestFile]) -> Run:
    """A finished run whose history holds ``artifacts/manifest.json`` (as a software run leaves it)."""
    done = run(RunConfig(GOAL, (str(vault),), provider="offline", budgets=Budgets(max_nodes=1)))
    Manifest(files=files, run_id=done.id).save(done.history.dir / "artifacts" / "manifest.json")
    return done


def files_under(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text("utf-8") for p in folder.rglob("*") if p.is_file()}


def test_export_writes_the_code_and_refuses_what_would_leave_dir(
    shad: Any, vault: Path, tmp_path: Path
) -> None:
    done = software_run(
        vault,
        [
            ManifestFile.make("pkg/__init__.py", ""),
            ManifestFile.make("pkg/core.py", "def f() -> int:\n    return 1\n"),
            ManifestFile.make("../evil.py", "print('out')\n"),
        ],
    )
    target = tmp_path / "work" / "project"
    r = shad("export", done.id, "--output", str(target))
    assert r.code == 3, r.err
    assert files_under(target) == {"pkg/__init__.py": "", "pkg/core.py": "def f() -> int:\n    return 1\n"}
    assert not (tmp_path / "work" / "evil.py").exists() and not (tmp_path / "evil.py").exists()
    assert "pkg/core.py" in r.out and "written" in r.out
    assert "../evil.py" in r.out and "refused" in r.out
    assert "2 written, 0 skipped, 1 refused" in r.err
    assert f"report: {done.history.dir / 'final.report.md'}" in r.err
    assert not (target / "final.report.md").exists() and not (target / "artifacts").exists()


def test_export_keeps_existing_files_unless_overwrite(shad: Any, vault: Path, tmp_path: Path) -> None:
    done = software_run(
        vault, [ManifestFile.make("app.py", "print('new')\n"), ManifestFile.make("util.py", "X = 1\n")]
    )
    target = tmp_path / "project"
    target.mkdir()
    (target / "app.py").write_text("print('mine')\n", encoding="utf-8")

    kept = shad("export", done.id, "--output", str(target), "--json")
    assert kept.code == 3, kept.err
    report = kept.json()
    assert set(report) == {"output", "written", "skipped", "refused"}
    assert [w["path"] for w in report["written"]] == ["util.py"] and report["refused"] == []
    assert [(s["path"], s["reason"]) for s in report["skipped"]] == [("app.py", "exists; pass --overwrite")]
    assert (target / "app.py").read_text("utf-8") == "print('mine')\n"

    replaced = shad("export", done.id, "--output", str(target), "--overwrite", "--json")
    assert replaced.code == 0, replaced.err
    written = {w["path"]: w["reason"] for w in replaced.json()["written"]}
    assert written == {"app.py": "overwritten"}  # util.py already holds the same bytes
    assert [(s["path"], s["reason"]) for s in replaced.json()["skipped"]] == [("util.py", "unchanged")]
    assert (target / "app.py").read_text("utf-8") == "print('new')\n"

    again = shad("export", done.id, "--output", str(target))  # everything already in place
    assert again.code == 0, again.err
    assert "0 written, 2 skipped, 0 refused" in again.err


def test_export_without_overwrite_says_how_to_replace(shad: Any, vault: Path, tmp_path: Path) -> None:
    done = software_run(vault, [ManifestFile.make("app.py", "print('new')\n")])
    target = tmp_path / "project"
    target.mkdir()
    (target / "app.py").write_text("print('mine')\n", encoding="utf-8")
    r = shad("export", done.id, "--output", str(target))
    assert r.code == 3
    assert "skipped" in r.out and "--overwrite" in r.err


def test_export_of_a_run_without_a_manifest_copies_the_report(shad: Any, vault: Path, tmp_path: Path) -> None:
    done = run(RunConfig(GOAL, (str(vault),), provider="offline"))
    target = tmp_path / "exported"
    r = shad("export", done.id, "--output", str(target), "--json")
    assert r.code == 0, r.err
    assert r.json()["output"] == str(target)
    assert {"final.report.md", "final.summary.json", "dag.json"} <= set(r.json()["copied"])
    assert (target / "final.report.md").read_bytes() == (done.history.dir / "final.report.md").read_bytes()


def test_export_of_a_malformed_manifest_is_a_usage_error(shad: Any, vault: Path, tmp_path: Path) -> None:
    done = run(RunConfig(GOAL, (str(vault),), provider="offline", budgets=Budgets(max_nodes=1)))
    (done.history.dir / "artifacts" / "manifest.json").write_text("{not json", encoding="utf-8")
    r = shad("export", done.id, "--output", str(tmp_path / "out"))
    one_line_error(r, "not valid JSON")
    assert not (tmp_path / "out").exists()


def test_export_of_an_unknown_run_writes_nothing(shad: Any, tmp_path: Path) -> None:
    r = shad("export", "nope", "--output", str(tmp_path / "out"), "--overwrite")
    assert r.code != 0 and "no run 'nope' found" in r.err and "Traceback" not in r.err
    assert not (tmp_path / "out").exists()
