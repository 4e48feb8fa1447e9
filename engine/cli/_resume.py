"""``shad resume`` and ``shad replay``: continue a stopped run, or run a recorded one again for free."""

from __future__ import annotations

import asyncio

import click
from rich.markup import escape

from ..errors import ShadError, UsageError
from ..runs import Run
from ..runs.budget import extra_tokens
from ._policy import default_policy, policy_option
from ._run import err, interruptible, print_outcome

__all__ = ["replay_cmd", "resume_cmd", "resume_run"]


def resume_run(
    run_id: str,
    *,
    budget: str | None = None,
    max_tokens: int | None = None,
    max_depth: int | None = None,
    max_nodes: int | None = None,
    max_branching: int | None = None,
    replay: str | None = None,
    store_url: str | None = None,
    as_json: bool = False,
    checkpoints: str | None = None,
    hint: str = "",
) -> int:
    from ..runs import aresume
    from ._checkpoint import TerminalDecider

    if budget and max_tokens is not None:
        raise UsageError("give --budget or --max-tokens, not both")
    previous = Run.load(run_id)
    decider = TerminalDecider() if checkpoints == "ask" else None
    run = interruptible(
        lambda: asyncio.run(
            aresume(
                run_id,
                add_tokens=extra_tokens(budget, previous.config.budgets.max_tokens if previous.config else 0),
                max_tokens=max_tokens,
                max_depth=max_depth,
                max_nodes=max_nodes,
                max_branching=max_branching,
                replay=replay,
                store_url=store_url,
                checkpoints=checkpoints,
                decider=decider,
                hint=hint,
            )
        ),
        lambda: previous.id,
    )
    if not as_json:
        resumed = [e for e in run.events if e.get("type") == "RUN_RESUMED"]
        if resumed:
            last = resumed[-1]
            err.print(
                f"resumed {escape(run.id)}: {len(last.get('kept', []))} nodes kept, "
                f"{len(last.get('reverified', []))} re-verified, {len(last.get('rerun', []))} run again"
            )
    return print_outcome(run, as_json)


@click.command("resume")
@click.argument("run_id")
@click.option("--replay", metavar="NODE|subtree:NODE|stale", help="Run these nodes again on purpose.")
@click.option("--budget", metavar="+N|+P%", help="More tokens: +20000, or +25% of the original budget.")
@click.option("--max-tokens", type=int, help="The run's token budget, in all (instead of --budget).")
@click.option("--max-depth", type=int, help="A new depth limit.")
@click.option("--max-nodes", type=int, help="A new node limit (subtasks a smaller one cut then run).")
@click.option("--max-branching", type=int, help="A new limit of subtasks per node.")
@click.option(
    "--redis", "redis_url", metavar="URL", help="Cache and ledger on this Redis (default: REDIS_URL)."
)
@policy_option
@click.option(
    "--hint",
    metavar="TEXT",
    default="",
    help="For nodes whose retries ran out (FAILED_WITH_DIAGNOSTIC): one more retrieval round with this hint.",
)
@click.option("--json", "as_json", is_flag=True, help="Print final.summary.json instead of the report.")
def resume_cmd(
    run_id: str,
    replay: str | None,
    budget: str | None,
    max_tokens: int | None,
    max_depth: int | None,
    max_nodes: int | None,
    max_branching: int | None,
    redis_url: str | None,
    checkpoint_policy: str | None,
    no_checkpoints: bool,
    hint: str,
    as_json: bool,
) -> int:
    """Continue a stopped run: finished nodes whose notes are unchanged are kept, stale ones are
    re-verified (or run again), the rest runs within the budget left; subtasks a limit cut from the plan
    run once the new limits make room for them. Every resume is an event in the run's own history."""
    return resume_run(
        run_id,
        budget=budget,
        max_tokens=max_tokens,
        max_depth=max_depth,
        max_nodes=max_nodes,
        max_branching=max_branching,
        replay=replay,
        store_url=redis_url,
        as_json=as_json,
        checkpoints=default_policy(checkpoint_policy, no_checkpoints),
        hint=hint,
    )


@click.command("replay")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print final.summary.json instead of the report.")
def replay_cmd(run_id: str, as_json: bool) -> int:
    """Run RUN_ID again as a new run, every model call answered from its recording: the same DAG,
    decisions and citations, and no model call made."""
    from ..runs import areplay

    run = asyncio.run(areplay(run_id))
    diverged = [f for f in run.failures if "does not have" in str(f.get("message", ""))]
    if diverged:
        first = diverged[0]
        raise ShadError(
            f"the replay of {run_id} diverged at node {first.get('node_id')}: {first.get('message')}",
            hint=f"the partial replay is in {run.history.dir}; run it live, or record it again",
            run_id=run.id,
        )
    if not as_json:
        calls = run.summary["metrics"]["llm_calls"]
        err.print(f"replayed {escape(run_id)} as {escape(run.id)}: {calls} calls answered from the recording")
    return print_outcome(run, as_json)
