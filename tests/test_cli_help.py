"""``shad --help`` is instant: commands load on demand, the listing matches click's own, and no help
screen imports a heavy module (speed itself is measured by benchmarks/bench_cli_help.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from engine.cli import COMMANDS, cli

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "anthropic", "openai", "networkx", "nbclient", "papermill", "RestrictedPython")


def _eager_group() -> click.Group:
    """The same group with every command loaded up front: what click itself would list."""
    group = click.Group("shad", help=cli.help, context_settings=cli.context_settings, params=cli.params)
    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name
        group.add_command(command)
    return group


def test_the_listing_is_click_own_listing() -> None:
    lazy = CliRunner().invoke(cli, ["--help"], prog_name="shad", terminal_width=100)
    eager = CliRunner().invoke(_eager_group(), ["--help"], prog_name="shad", terminal_width=100)
    assert lazy.exit_code == 0
    assert lazy.output == eager.output
    for name in COMMANDS:
        assert f"\n  {name} " in lazy.output


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["frobnicate"])
    assert result.exit_code == 2 and "No such command" in result.output


@pytest.mark.parametrize(
    "args",
    [[], *[[name] for name in COMMANDS], ["vault", "search"], ["trace", "node"], ["cache", "clear"]],
    ids=lambda args: " ".join(["shad", *args, "--help"]),
)
def test_help_screens_import_no_heavy_module(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "engine.cli", *args, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Usage: " in proc.stdout
    loaded = {
        line.rsplit("|", 1)[-1].strip().split(".")[0] for line in proc.stderr.splitlines() if "|" in line
    }
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
