"""The ``shad`` command: a thin layer over the engine. Every failure ends in one clear line."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence

import click
from rich.console import Console
from rich.markup import escape

from .._version import __version__
from ..errors import ShadError
from ._batch import batch_cmd
from ._cache import cache_group
from ._checkpoint import checkpoint_cmd
from ._resume import replay_cmd, resume_cmd
from ._run import export_cmd, run_cmd, runs_cmd, status_cmd, trace_group
from ._sandbox import sandbox_group
from ._vault import vault_group

__all__ = ["cli", "main"]

err_console = Console(stderr=True, highlight=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="shad")
def cli() -> None:
    """Shad (Shannon's Daemon): let a language model use an Obsidian vault far larger than its context."""


for command in (run_cmd, resume_cmd, replay_cmd, status_cmd, trace_group, export_cmd, runs_cmd, vault_group):
    cli.add_command(command)
cli.add_command(sandbox_group)
cli.add_command(cache_group)
cli.add_command(batch_cmd)
cli.add_command(checkpoint_cmd)


def _fail(message: str, hint: str | None, code: int) -> int:
    line = f"[bold red]shad: error:[/] {escape(message)}" + (f" [dim]({escape(hint)})[/]" if hint else "")
    err_console.print(line, soft_wrap=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code instead of raising."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args=args, prog_name="shad", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # pragma: no cover - click >= 8.2
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "shad"
        return _fail(exc.format_message(), f"see '{command} --help'", 2)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.Abort:
        err_console.print("shad: aborted")
        return 130
    except KeyboardInterrupt:
        err_console.print("shad: interrupted")
        return 130
    except ShadError as exc:
        return _fail(exc.message, exc.hint, exc.exit_code)
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: one line, the traceback only on request
        if os.environ.get("SHAD_DEBUG"):
            traceback.print_exc()
        return _fail(
            f"internal error: {type(exc).__name__}: {exc}",
            "this is a bug in shad; rerun with SHAD_DEBUG=1 to see the traceback and report it",
            1,
        )
    return int(result) if isinstance(result, int) else 0
