"""``shad export``: a software run's code into a folder (through the safe writer), or any other run's
report, summary, DAG and artifacts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..runs import Run
from ._term import show

__all__ = ["export_cmd", "export_exit_code", "manifest_of"]

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def manifest_of(run: Run) -> Path | None:
    """The run's ``artifacts/manifest.json`` when it is a software run that kept one, else None."""
    path = run.history.dir / "artifacts" / "manifest.json"
    return path if path.is_file() else None


def export_exit_code(report: dict[str, Any]) -> int:
    """0 when every file is in place (written, or already there with the same bytes); 3 when a file was
    refused, or left as it was because it exists and differs (no --overwrite)."""
    left = [s for s in report["skipped"] if s.get("reason") != "unchanged"]
    return 3 if report["refused"] or left else 0


@click.command("export")
@click.argument("run_id")
@click.option(
    "--output",
    required=True,
    metavar="DIR",
    help="Folder to write a software run's code into, or to copy another run's report and artifacts into.",
)
@click.option(
    "--overwrite", is_flag=True, help="Replace existing files of a software run's code (default: keep them)."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print what happened to each file as JSON (a software run)."
)
def export_cmd(run_id: str, output: str, overwrite: bool, as_json: bool) -> int:
    """Write a software run's code into DIR, or copy another run's report, summary, DAG and artifacts
    there (nothing is written anywhere else).

    A software run (one that kept artifacts/manifest.json) writes only its code files into DIR, through
    the safe writer: nothing outside DIR, no symlink followed out of it, existing files kept unless
    --overwrite. Its report stays in the run's history. Exit 0 when every file is in place, 3 when a file
    was skipped (exists; give --overwrite) or refused (an unsafe path), 2 on a usage error.
    """
    run = Run.load(run_id)  # an unknown id fails here, before anything is made
    target = Path(output).expanduser()
    manifest_path = manifest_of(run)
    if manifest_path is not None:
        return _export_code(run, manifest_path, target, overwrite, as_json)
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in ("final.report.md", "final.summary.json", "dag.json"):
        src = run.history.dir / name
        if src.exists():
            shutil.copy2(src, target / name)
            copied.append(name)
    artifacts = run.history.dir / "artifacts"
    if artifacts.is_dir() and any(artifacts.iterdir()):
        shutil.copytree(artifacts, target / "artifacts", dirs_exist_ok=True)
        copied.append("artifacts/")
    if as_json:
        click.echo(json.dumps({"output": str(target), "copied": copied}, ensure_ascii=False, indent=2))
    else:
        out.print(f"exported {', '.join(copied) or 'nothing'} to {escape(str(target))}")
    return 0


def _export_code(run: Run, manifest_path: Path, target: Path, overwrite: bool, as_json: bool) -> int:
    from ..output import Manifest, write_manifest

    report = write_manifest(Manifest.load(manifest_path), target, overwrite=overwrite).to_dict()
    code = export_exit_code(report)
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return code
    table = Table("file", "status", "reason", box=None, padding=(0, 2, 0, 0))
    for fate, colour, rows in (
        ("written", "green", report["written"]),
        ("skipped", "yellow", report["skipped"]),
        ("refused", "red", report["refused"]),
    ):
        for row in rows:
            table.add_row(escape(row["path"]), f"[{colour}]{fate}[/]", escape(row.get("reason", "")))
    if table.row_count:
        show(out, table)
    counts = ", ".join(f"{len(report[k])} {k}" for k in ("written", "skipped", "refused"))
    err.print(f"{counts} in {escape(str(target))}")
    if any(s.get("reason") != "unchanged" for s in report["skipped"]):
        err.print("existing files were kept: give --overwrite to replace them")
    err.print(f"report: {escape(str(run.history.dir / 'final.report.md'))}")
    return code
