"""The ``shad`` command: a thin layer over the engine. Every failure ends in one clear line."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence

import click

from .._version import __version__
from ..errors import ShadError

__all__ = ["COMMANDS", "cli", "main"]

# Every command: the module that defines it (imported only when the command is used or asked for its
# own help), the object's name there, and the one line ``shad --help`` shows (a test checks it matches).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": (
        "_run",
        "run_cmd",
        "Run GOAL over the vault(s): decompose, retrieve, answer, verify, synthesize a cited report.",
    ),
    "resume": (
        "_resume",
        "resume_cmd",
        "Continue a stopped run: finished nodes whose notes are unchanged are kept, stale ones are "
        "re-verified (or run again), the rest runs within the budget left.",
    ),
    "replay": (
        "_resume",
        "replay_cmd",
        "Run RUN_ID again as a new run, every model call answered from its recording: the same DAG, "
        "decisions and citations, and no model call made.",
    ),
    "status": (
        "_status",
        "status_cmd",
        "Status, goal, metrics, missing branches and failures of a run (without RUN_ID: the latest).",
    ),
    "trace": ("_status", "trace_group", "Look inside a run: its DAG, or one node."),
    "export": (
        "_export",
        "export_cmd",
        "Write a software run's code into DIR, or copy another run's report, summary, DAG and artifacts "
        "there (nothing is written anywhere else).",
    ),
    "runs": ("_status", "runs_cmd", "Recent runs, newest first."),
    "vault": ("_vault", "vault_group", "Read, index and search Obsidian vaults."),
    "sandbox": (
        "_sandbox",
        "sandbox_group",
        "Run Code Mode scripts in the sandbox (restricted Python, isolated process, vault via the API).",
    ),
    "cache": (
        "_cache",
        "cache_group",
        "The cache of node results (SQLite under $SHAD_HOME, or Redis with --redis / REDIS_URL).",
    ),
    "batch": (
        "_batch",
        "batch_cmd",
        "Run NB once per row of GOALS.csv (columns become notebook parameters; a goal column is "
        "required) and write DIR/results.csv (and results.parquet): status, run id, tokens, citations ...",
    ),
    "checkpoint": ("_checkpoint", "checkpoint_cmd", "Without a decision: list what RUN_ID waits for."),
    "verify": (
        "_verify",
        "verify_cmd",
        "Check the code in a project folder or a manifest.json.",
    ),
    "ingest": (
        "_ingest",
        "ingest_cmd",
        "Bring a folder, git repository or git URL into the vault as an immutable, provenance-stamped "
        "snapshot.",
    ),
    "enrich": ("_ingest", "enrich_cmd", "Add a symbol and module index to an ingested snapshot."),
    "sources": ("_sources", "sources_group", "The ingested sources and their snapshots (the shadow index)."),
    "history": ("_history", "history_group", "Run histories: retention tiers (hot, warm, cold) and pins."),
    "skills": ("_skills", "skills_group", "Skills: guidance (and strategies) runs add when their goal fits."),
    "learnings": ("_curation", "learnings_group", "Notes runs proposed: list them, promote or reject them."),
    "serve": (
        "_serve",
        "serve_cmd",
        "Serve the engine over HTTP: runs with live events (SSE), vault search, checkpoints and approvals.",
    ),
    "mcp": ("_mcp", "mcp_group", "Shad as an MCP server (stdio or streamable HTTP)."),
    "watch": (
        "_watch",
        "watch_cmd",
        "Run the task notes of a vault (type: task, status: pending) and mark them complete or failed.",
    ),
    "approvals": (
        "_curation",
        "approvals_group",
        "Deletes and publishing wait here for a person: list, approve or reject them.",
    ),
}


class _LazyGroup(click.Group):
    """Imports a command's module only when that command runs or shows its own help, so that
    ``shad --help`` loads none of them (and ``shad run --help`` only ``_run``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[cmd_name]
        command = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> object:
        # click turns Ctrl-C into Abort after printing an empty line; a command that knows more (shad
        # run: how to resume) says so itself, any other one ends in this single line, exit 130.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _say("shad: interrupted")
            raise click.exceptions.Exit(130) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))  # what click's own listing allows
        # click's own shortening of a command's help (a Command made just for its text: no import)
        rows = [
            (name, click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit)) for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="shad")
def cli() -> None:
    """Shad (Shannon's Daemon): let a language model use an Obsidian vault far larger than its context."""


def _say(markup: str) -> None:
    """One line on stderr (rich is imported here, not at start-up: ``shad --help`` never needs it)."""
    from rich.console import Console

    Console(stderr=True, highlight=False).print(markup, soft_wrap=True)


def _fail(message: str, hint: str | None, code: int) -> int:
    from rich.markup import escape

    _say(f"[bold red]shad: error:[/] {escape(message)}" + (f" [dim]({escape(hint)})[/]" if hint else ""))
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code instead of raising."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 3 and args[0] == "run" and args[1] in ("pin", "unpin"):
        args = ["history", args[1], args[2]]  # `shad run pin RUN_ID` is `shad history pin RUN_ID`
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
        _say("shad: aborted")
        return 130
    except KeyboardInterrupt:
        _say("shad: interrupted")
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
