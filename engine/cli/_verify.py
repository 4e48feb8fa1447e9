"""``shad verify``: check a project folder or a run's manifest.json, for people and for CI.

Only click is imported here: ``shad verify --help`` must stay instant, so the checker (and rich) load
when the command runs.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

__all__ = ["verify_cmd"]

LEVEL_CHOICES = ("basic", "build", "strict")  # engine.verify.LEVELS without "off" (a test keeps them in step)


def _split(values: tuple[str, ...]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


@click.command("verify")
@click.argument("path", metavar="PATH")
@click.option(
    "--level",
    type=click.Choice(LEVEL_CHOICES),
    default="basic",
    show_default=True,
    help="basic: syntax, imports, integrity; build: + types (mypy, tsc); strict: + tests (pytest), lint.",
)
@click.option(
    "--block-on",
    "block_on",
    multiple=True,
    metavar="CHECKS",
    help="Comma-separated checks that also block (run even above --level).",
)
@click.option(
    "--warn-only",
    "warn_only",
    multiple=True,
    metavar="CHECKS",
    help="Comma-separated checks that only warn: their findings are listed, the exit code ignores them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option(
    "--timeout",
    type=click.FloatRange(1, 3600),
    default=120,
    show_default=True,
    help="Seconds each tool (mypy, pytest, ruff ...) may run before it is killed.",
)
def verify_cmd(
    path: str,
    level: str,
    block_on: tuple[str, ...],
    warn_only: tuple[str, ...],
    as_json: bool,
    timeout: float,
) -> int:
    """Check the code in a project folder or a manifest.json.

    PATH is a project folder (checked as one project: its own imports resolve) or a run's manifest.json.
    The checks are syntax, imports, integrity, types, tests and lint; --level picks which run and block.
    Tools run on a temporary copy in a limited subprocess, without network where bubblewrap works.
    Exit 0 when no blocking check failed, 3 when one did, 2 on a usage error.
    """
    from ..verify import verify_path

    options: dict[str, Any] = {
        "block_on": _split(block_on),
        "warn_only": _split(warn_only),
        "timeout": timeout,
    }
    if sys.stderr.isatty() and not as_json:
        from rich.console import Console

        with Console(stderr=True).status(f"verifying {path} ({level}) ..."):
            report = verify_path(path, level, **options)
    else:
        report = verify_path(path, level, **options)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        _show(report)
    return 0 if report.ok else 3


def _show(report: Any) -> None:
    """The table of checks, then every finding as ``path:line: message``."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from ._term import show

    out = Console(highlight=False, soft_wrap=True)
    colour = {"pass": "green", "fail": "red", "skip": "yellow"}
    table = Table("check", "status", "findings", "reason", box=None, padding=(0, 2, 0, 0))
    for name, result in report.checks.items():
        status = f"[{colour[result.status]}]{result.status}[/]"
        if result.status == "fail" and name not in report.blocking:
            status += " [dim](warn only)[/]"
        table.add_row(name, status, str(len(result.findings)), escape(result.reason))
    show(out, table)
    for name, result in report.checks.items():
        for f in result.findings:
            where = f"{f.path}:{f.line}" if f.line is not None else f.path
            out.print(f"{escape(where)}: {escape(f.message)} [dim]({name})[/]")
    verdict = "[green]ok[/]" if report.ok else "[bold red]blocked[/]"
    failed = [n for n in report.blocking if report.checks[n].status == "fail"]
    out.print(f"{verdict} at level {report.level}" + (f": {', '.join(failed)} failed" if failed else ""))
    out.print(f"[dim]isolation: {escape(report.isolation)}[/]")
