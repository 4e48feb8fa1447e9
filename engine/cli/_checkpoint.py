"""``shad checkpoint``: see what a paused run waits for, decide, and continue it; and the terminal prompt
that answers checkpoints as they open under the ``ask`` policy (the default on a terminal)."""

from __future__ import annotations

import asyncio
import json

import click
from rich.live import Live
from rich.markup import escape

from ..errors import ShadError, UsageError
from ..runs import checkpoints as cp
from ._policy import default_policy, policy_option
from ._run import err, out

__all__ = ["TerminalDecider", "checkpoint_cmd"]

_KEYS = {"a": "approve", "e": "edit", "h": "hint", "s": "skip", "t": "stop", "l": "later"}


class TerminalDecider:
    """Asks on the terminal, one checkpoint at a time, with the live view put aside meanwhile."""

    def __init__(self) -> None:
        self.live: Live | None = None

    async def __call__(self, checkpoint: cp.Checkpoint) -> cp.Decision | None:
        return await asyncio.to_thread(self._ask, checkpoint)

    def _ask(self, checkpoint: cp.Checkpoint) -> cp.Decision | None:
        if self.live is not None:
            self.live.stop()
        try:
            show(checkpoint)
            # Only the actions this checkpoint takes (a conflict checkpoint has no notes to edit).
            keys = [k for k, action in _KEYS.items() if action in checkpoint.options or action == "later"]
            labels = {"a": "[a]pprove", "e": "[e]dit", "h": "[h]int", "s": "[s]kip", "t": "s[t]op"}
            prompt = ", ".join(labels[k] for k in keys if k in labels) + ", or decide [l]ater"
            while True:
                key = click.prompt(
                    prompt,
                    type=click.Choice(keys),
                    default="l",
                    err=True,
                )
                action = _KEYS[key]
                if action == "later":
                    return None
                text = ""
                if action in ("edit", "hint"):
                    label = "Notes to use (comma-separated)" if action == "edit" else "Your hint"
                    text = click.prompt(label, err=True).strip()
                    if action == "edit":
                        try:
                            cp.check_edit_for_run(checkpoint.run_id, text)
                        except ShadError as exc:
                            err.print(f"[red]{escape(exc.message)}[/]")
                            continue
                return cp.Decision(action, text)
        finally:
            if self.live is not None:
                self.live.start()


def show(checkpoint: cp.Checkpoint) -> None:
    err.print(
        f"\n[bold yellow]Checkpoint[/] [bold]{escape(checkpoint.node_id)}[/]: {escape(checkpoint.task)}"
    )
    err.print(f"  why: {escape(checkpoint.reason)}")
    err.print(f"  high-impact: {escape(checkpoint.impact)}")
    signals = checkpoint.signals
    shown = ("retrieval_score", "confidence", "keyword_overlap", "coverage", "num_items")
    err.print("  signals: " + ", ".join(f"{k} {signals[k]}" for k in shown if k in signals))
    for item in checkpoint.context[:6]:
        text = " ".join(str(item.get("text", "")).split())[:100]
        err.print(f"  found {escape(str(item.get('citation')))}: [dim]{escape(text)}[/]")
    if not checkpoint.context:
        err.print("  found nothing in the vaults")


@click.command("checkpoint")
@click.argument("run_id")
@click.argument("node", required=False)
@click.option("--approve", is_flag=True, help="Go on with what retrieval found.")
@click.option(
    "--edit", metavar="NOTES", help="Use these notes instead (wikilinks or paths, comma-separated)."
)
@click.option("--hint", metavar="TEXT", help="A hint for one more retrieval round.")
@click.option("--skip", is_flag=True, help="Skip the node; the run goes on without it.")
@click.option("--stop", is_flag=True, help="Stop the run: synthesize what finished.")
@click.option("--no-resume", is_flag=True, help="Record the decision only; continue later with shad resume.")
@policy_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the checkpoints, or the run's summary).")
def checkpoint_cmd(
    run_id: str,
    node: str | None,
    approve: bool,
    edit: str | None,
    hint: str | None,
    skip: bool,
    stop: bool,
    no_resume: bool,
    checkpoint_policy: str | None,
    no_checkpoints: bool,
    as_json: bool,
) -> int:
    """Without a decision: list what RUN_ID waits for. With one: record it for NODE (optional when one
    checkpoint waits) and continue the run."""
    chosen = [
        (name, text)
        for name, given, text in (
            ("approve", approve, ""),
            ("edit", edit is not None, edit or ""),
            ("hint", hint is not None, hint or ""),
            ("skip", skip, ""),
            ("stop", stop, ""),
        )
        if given
    ]
    if len(chosen) > 1:
        raise UsageError("give one decision", hint="--approve, --edit NOTES, --hint TEXT, --skip or --stop")
    if not chosen:
        pending = cp.pending_checkpoints(run_id)
        if node is not None:
            pending = [c for c in pending if c.node_id == node]
        if as_json:
            click.echo(json.dumps([c.to_dict() for c in pending], ensure_ascii=False, indent=2))
            return 0
        if not pending:
            out.print(f"run {escape(run_id)} waits for no decision")
            return 0
        for c in pending:
            show(c)
            for command in c.commands():
                err.print(f"    [bold]{escape(command)}[/]")
        return 0
    action, text = chosen[0]
    decided = cp.decide(run_id, node, action, text)
    if no_resume:
        err.print(
            f"recorded {action} for {escape(decided.node_id)}; continue with: shad resume {escape(run_id)}"
        )
        return 0
    from ._resume import resume_run

    return resume_run(run_id, as_json=as_json, checkpoints=default_policy(checkpoint_policy, no_checkpoints))
