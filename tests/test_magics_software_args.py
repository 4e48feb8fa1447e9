"""``%%shad run``'s software options (--verify, --block-on, --warn-only, --tests, --write-files,
--output-dir, --overwrite) map to ``RunConfig`` fields, bad ones are ``ShadUsageError``s, ``-o NAME`` still
binds the result, and ``%shad export RUN_ID DIR [--overwrite]`` writes a software run's code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _demo import DEMO
from _notebook_helpers import magics_shell, ok
from IPython.core.interactiveshell import InteractiveShell

from engine import Run
from engine.output import Manifest, ManifestFile
from shad_magics import ShadResult, ShadUsageError
from shad_magics._args import RUN_HELP, parse_run, parse_subcommand
from shad_magics._launch import config_for

GOAL = "How long should I rest beans after roasting, and why?"


def test_every_software_option_maps_to_its_config_field() -> None:
    args = parse_run(
        "run --verify strict --block-on lint --block-on types,imports --warn-only tests --tests tdd "
        "--write-files --output-dir '/tmp/my project' --overwrite -o result"
    )
    assert args.options == {
        "verify": "strict",
        "tests": "tdd",
        "block_on": ("lint", "types", "imports"),
        "warn_only": ("tests",),
        "write_files": True,
        "output": "/tmp/my project",
        "overwrite": True,
    }
    assert args.output == "result"  # -o still binds the result in the notebook


def test_options_not_given_stay_the_engines() -> None:
    assert parse_run("run --vault V -o res").options == {}
    assert parse_run("run --verify off").options == {"verify": "off"}


def test_the_seeds_aliases_resolve_to_the_checks() -> None:
    args = parse_run("run --block-on typecheck,unit_tests --warn-only Import_Resolution,manifest")
    assert args.options == {"block_on": ("types", "tests"), "warn_only": ("imports", "integrity")}
    assert parse_run("run --block-on type_check,types").options == {"block_on": ("types",)}


@pytest.mark.parametrize(
    ("line", "needles"),
    [
        ("run --output-dir /tmp/x", ["--output-dir /tmp/x", "without --write-files"]),
        ("run --write-files", ["--write-files needs"]),
        ("run --write-files -o result", ["--write-files needs"]),  # -o is a name, not the folder
        ("run --block-on bogus", ["--block-on", "bogus"]),
        ("run --warn-only lint,nonsense", ["--warn-only", "nonsense"]),
        ("run --block-on lint --warn-only lint", ["lint", "both"]),
        ("run --verify paranoid", ["--verify", "paranoid"]),
        ("run --tests never", ["--tests", "never"]),
    ],
)
def test_bad_software_options_are_usage_errors(line: str, needles: list[str]) -> None:
    with pytest.raises(ShadUsageError) as info:
        parse_run(line)
    for needle in needles:
        assert needle in info.value.message, (needle, info.value.message)


def test_an_unknown_check_lists_the_checks() -> None:
    with pytest.raises(ShadUsageError) as info:
        parse_run("run --block-on bogus")
    assert "syntax, imports, integrity, types, tests, lint" in (info.value.hint or "")


def test_the_options_build_a_run_config(tmp_path: Path) -> None:
    out = tmp_path / "code"
    args = parse_run(f"run --verify build --tests off --block-on lint --write-files --output-dir {out}")
    config = config_for(GOAL, [str(DEMO)], args.options)
    assert (config.verify, config.tests, config.block_on) == ("build", "off", ("lint",))
    assert config.write_files and config.output == str(out.resolve()) and not config.overwrite


def test_run_help_lists_the_software_options() -> None:
    for option in ("--verify", "--block-on", "--warn-only", "--tests", "--write-files", "--output-dir"):
        assert option in RUN_HELP, option
    assert "-o NAME, --output NAME" in RUN_HELP


def test_export_takes_overwrite() -> None:
    assert parse_subcommand("export R '/tmp/out dir'")[1].overwrite is False
    sub, ns = parse_subcommand("export R /tmp/out --overwrite")
    assert (sub, ns.run_id, ns.dir, ns.overwrite) == ("export", "R", "/tmp/out", True)


# --- in a real shell -------------------------------------------------------------------------------------


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    yield from magics_shell(tmp_path, monkeypatch, DEMO)


def test_a_cell_run_carries_the_options_and_binds_the_result(shell: InteractiveShell) -> None:
    line = "run --max-nodes 1 --verify strict --tests off --block-on typecheck --no-widget -o res"
    result = ok(shell.run_cell(f"%%shad {line}\n{GOAL}"))
    assert isinstance(result, ShadResult) and shell.user_ns["res"] is result
    config = Run.load(result.run_id).config
    assert config is not None
    assert (config.verify, config.tests, config.block_on) == ("strict", "off", ("types",))
    assert not config.write_files and config.output is None


def test_a_folder_without_write_files_fails_before_a_run(shell: InteractiveShell, tmp_path: Path) -> None:
    failed = shell.run_cell(f"%%shad run --output-dir {tmp_path / 'code'} --no-widget\n{GOAL}")
    assert isinstance(failed.error_in_exec, ShadUsageError)
    assert "--write-files" in failed.error_in_exec.message
    assert not (tmp_path / "history").exists() and not (tmp_path / "code").exists()


def test_export_writes_a_software_runs_code(shell: InteractiveShell, tmp_path: Path) -> None:
    result = ok(shell.run_cell(f"%%shad run --max-nodes 1 --no-widget\n{GOAL}"))
    run = Run.load(result.run_id)
    files = [ManifestFile.make("app.py", "print('new')\n"), ManifestFile.make("../evil.py", "x = 1\n")]
    Manifest(files=files, run_id=run.id).save(run.history.dir / "artifacts" / "manifest.json")
    target = tmp_path / "work" / "project"
    target.mkdir(parents=True)
    (target / "app.py").write_text("print('mine')\n", encoding="utf-8")

    kept = shell.run_line_magic("shad", f'export {run.id} "{target}"')
    assert kept.data["written"] == [] and [s["path"] for s in kept.data["skipped"]] == ["app.py"]
    assert [r["path"] for r in kept.data["refused"]] == ["../evil.py"]
    assert (target / "app.py").read_text("utf-8") == "print('mine')\n"
    assert "--overwrite" in kept.markdown and "final.report.md" in kept.markdown

    replaced = shell.run_line_magic("shad", f'export {run.id} "{target}" --overwrite')
    assert [w["path"] for w in replaced.data["written"]] == ["app.py"]
    assert (target / "app.py").read_text("utf-8") == "print('new')\n"
    assert sorted(p.name for p in target.iterdir()) == ["app.py"]
    assert not (tmp_path / "work" / "evil.py").exists()
