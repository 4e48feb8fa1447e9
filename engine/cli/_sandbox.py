"""``shad sandbox run``: run one Code Mode script against vaults and print its result as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..codemode import PROFILES, Sandbox, SandboxError
from ..errors import UsageError

__all__ = ["sandbox_group"]


def _echo(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _read_script(script: str) -> str:
    try:
        raw = sys.stdin.buffer.read() if script == "-" else Path(script).read_bytes()
    except OSError as exc:
        message = f"cannot read the script {script!r}: {exc.strerror or exc}"
        raise UsageError(message, hint="give a file, or '-' for standard input") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"the script {script!r} is not UTF-8 text") from None


@click.group("sandbox")
def sandbox_group() -> None:
    """Run Code Mode scripts in the sandbox (restricted Python, isolated process, vault via the API)."""


@sandbox_group.command("run")
@click.argument("script", metavar="SCRIPT.py")
@click.option(
    "--vault",
    "vaults",
    multiple=True,
    required=True,
    metavar="DIR",
    help="Vault folder; repeat for layered vaults (first has priority).",
)
@click.option(
    "--profile",
    type=click.Choice(PROFILES),
    default="strict",
    show_default=True,
    help="strict: vault API only; local: + read-only --fs-read folders; extended: + HTTP GET (--net-allow).",
)
@click.option("--fs-read", "fs_read", multiple=True, metavar="DIR", help="Read-only folder (profile local).")
@click.option(
    "--net-allow", "net_allow", multiple=True, metavar="HOST", help="Host for HTTP GET (profile extended)."
)
@click.option("--timeout", type=click.FloatRange(0.1, 3600), help="Wall-clock limit in seconds (default 60).")
@click.option(
    "--isolation",
    type=click.Choice(["auto", "bubblewrap", "subprocess"]),
    default="auto",
    show_default=True,
    help="auto uses bubblewrap when it works here.",
)
def run_cmd(
    script: str,
    vaults: tuple[str, ...],
    profile: str,
    fs_read: tuple[str, ...],
    net_allow: tuple[str, ...],
    timeout: float | None,
    isolation: str,
) -> None:
    """Run SCRIPT.py ('-' reads standard input). Prints {"result", "stdout", "stats"} and exits 0, or
    {"error": {"kind", "type", "message"}} and exits 3 (blocked), 4 (limited) or 1 (error)."""
    source = _read_script(script)
    with Sandbox(list(vaults), profile, fs_read, net_allow, timeout, isolation=isolation) as sandbox:
        try:
            result = sandbox.run(source)
        except SandboxError as exc:
            _echo({"error": exc.to_dict()})
            raise click.exceptions.Exit(exc.exit_code) from None
    _echo(result.to_dict())
