"""``shad run``, ``status``, ``trace``, ``export``, ``runs``: thin commands over the engine."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console
from rich.live import Live
from rich.markup import escape

from ..config import Budgets, RunConfig
from ..errors import ShadError, UsageError
from ..runs import Run
from ._live import LiveTree, render_tree
from ._policy import policy_option
from ._software import software_config, software_options
from ._term import show, show_markdown
from ._vault import check_backends

__all__ = ["err", "interruptible", "out", "print_json", "print_outcome", "run_cmd"]

# Lines are never wrapped by us (a terminal wraps them for the eye, a pipe gets them whole: a path or a
# citation copies as one piece); layouts go through ``_term.show``, which wraps them on a terminal only.
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def _models(items: tuple[str, ...]) -> dict[str, str]:
    models = {}
    for item in items:
        tier, sep, model = item.partition("=")
        if not sep or not model:
            raise UsageError(
                f"--model takes TIER=MODEL_ID, got {item!r}", hint="e.g. --model leaf=claude-haiku-4-5"
            )
        models[tier.strip().lower()] = model.strip()
    return models


def _prices(items: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    prices = {}
    for item in items:
        model, _, rates = item.partition("=")
        try:
            rate_in, rate_out = (float(x) for x in rates.split(":"))
        except ValueError as exc:
            raise UsageError(f"--price takes MODEL=IN:OUT (USD per million tokens), got {item!r}") from exc
        prices[model.strip()] = (rate_in, rate_out)
    return prices


def _ttls(items: tuple[str, ...]) -> dict[str, float]:
    from ..runs.cache import parse_ttl

    out: dict[str, float] = {}
    for item in items:
        vault, sep, ttl = item.rpartition("=")
        try:
            if not sep or not vault:
                raise ValueError(f"expected VAULT=TTL, got {item!r}")
            out[vault] = parse_ttl(ttl)
        except ValueError as exc:
            raise UsageError(f"bad --cache-ttl: {exc}", hint="e.g. --cache-ttl docs=7d") from exc
    return out


@click.command("run")
@click.argument("goal")
@click.option("--vault", "vaults", multiple=True, metavar="DIR", help="Vault folder (repeatable).")
@click.option(
    "--backend",
    "backends",
    multiple=True,
    metavar="mcp:COMMAND|mcp:URL",
    help="A vault read through an MCP server instead of a folder (repeatable; after the --vault folders).",
    callback=check_backends,
)
@click.option("--strategy", help="software, research, analysis, planning or creative (default: classified).")
@click.option("--max-depth", type=int, default=Budgets.max_depth, show_default=True)
@click.option("--max-nodes", type=int, default=Budgets.max_nodes, show_default=True)
@click.option("--max-time", type=float, default=Budgets.max_wall_time, show_default=True, help="Seconds.")
@click.option("--max-tokens", type=int, default=Budgets.max_tokens, show_default=True)
@click.option("--max-usd", type=float, help="Stop once the model calls cost this much (needs --price).")
@click.option(
    "--price",
    "prices",
    multiple=True,
    metavar="MODEL=IN:OUT",
    help="USD per million input:output tokens of a model (repeatable).",
)
@click.option("--max-parallel", type=int, default=4, show_default=True)
@click.option("--max-llm", type=int, default=2, show_default=True, help="Model calls in flight.")
@click.option(
    "--concurrency-mode", type=click.Choice(["adaptive", "fixed"]), default="adaptive", show_default=True
)
@click.option(
    "--provider", help="anthropic, openai, claude-code, offline or replay (default: from the environment)."
)
@click.option("--model", "models", multiple=True, metavar="TIER=ID", help="Model id for a tier (repeatable).")
@click.option("--history-dir", help="Where to keep the run's history (default: <vault>/Shad/History/Runs).")
@click.option("--include-history", is_flag=True, help="Let retrieval cite earlier runs' reports.")
@click.option(
    "--no-code-mode", is_flag=True, help="Search directly instead of model-written retrieval scripts."
)
@click.option(
    "--garden", is_flag=True, help="Propose a type for untyped notes the run reads (to shad approvals)."
)
@click.option("--learn", is_flag=True, help="Propose the answer as a learning note (shad learnings promote).")
@click.option(
    "--profile",
    type=click.Choice(["strict", "local", "extended"]),
    default="strict",
    show_default=True,
    help="Sandbox profile for retrieval scripts.",
)
@click.option(
    "--fs-read", multiple=True, metavar="DIR", help="With --profile local: a folder scripts may read."
)
@click.option(
    "--net-allow", multiple=True, metavar="HOST", help="With --profile extended: a host scripts may GET."
)
@click.option(
    "--offline",
    is_flag=True,
    envvar="SHAD_OFFLINE",
    help="Refuse every external call (model APIs, sandbox HTTP, webhooks), even with keys set.",
)
@click.option(
    "--checkpoint-on",
    "checkpoint_on",
    multiple=True,
    metavar="STAGE[,STAGE]",
    help="Open a checkpoint at every node of these stages (as [REVIEW] in a goal does).",
)
@click.option("--voice", metavar="NAME", help="Render the final report in this voice (shad skills voices).")
@click.option(
    "--on-exhausted",
    type=click.Choice(["partial", "fail"]),
    default="partial",
    show_default=True,
    help="A node whose retries ran out (FAILED_WITH_DIAGNOSTIC) makes the run PARTIAL (exit 3) or "
    "FAILED_WITH_DIAGNOSTIC (exit 1).",
)
@click.option("--from", "replay_from", metavar="RUN_ID", help="With --provider replay: the run to replay.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--refresh-cache", is_flag=True, help="Recompute everything and overwrite the cache.")
@click.option(
    "--redis", "redis_url", metavar="URL", help="Cache and ledger on this Redis (default: REDIS_URL)."
)
@click.option(
    "--cache-ttl", "cache_ttls", multiple=True, metavar="VAULT=TTL", help="A vault's cache TTL, e.g. docs=7d."
)
@click.option(
    "--resume", "resume", is_flag=True, help="GOAL is a run id: continue that run (as shad resume)."
)
@policy_option
@software_options
@click.option("--json", "as_json", is_flag=True, help="Print final.summary.json instead of the report.")
def run_cmd(
    goal: str,
    vaults: tuple[str, ...],
    backends: tuple[str, ...],
    strategy: str | None,
    max_depth: int,
    max_nodes: int,
    max_time: float,
    max_tokens: int,
    max_usd: float | None,
    prices: tuple[str, ...],
    max_parallel: int,
    max_llm: int,
    concurrency_mode: str,
    provider: str | None,
    models: tuple[str, ...],
    history_dir: str | None,
    include_history: bool,
    no_code_mode: bool,
    garden: bool,
    learn: bool,
    profile: str,
    fs_read: tuple[str, ...],
    net_allow: tuple[str, ...],
    offline: bool,
    voice: str | None,
    on_exhausted: str,
    checkpoint_on: tuple[str, ...],
    replay_from: str | None,
    no_cache: bool,
    refresh_cache: bool,
    redis_url: str | None,
    cache_ttls: tuple[str, ...],
    resume: bool,
    checkpoint_policy: str | None,
    no_checkpoints: bool,
    verify: str,
    block_on: tuple[str, ...],
    warn_only: tuple[str, ...],
    tests: str | None,
    write_files: bool,
    output: str | None,
    overwrite: bool,
    as_json: bool,
) -> int:
    """Run GOAL over the vault(s): decompose, retrieve, answer, verify, synthesize a cited report."""
    from .. import strategies
    from ..runs import arun
    from ._checkpoint import TerminalDecider
    from ._policy import default_policy

    policy = default_policy(checkpoint_policy, no_checkpoints)
    if resume:
        from ._resume import resume_run

        return resume_run(goal, store_url=redis_url, as_json=as_json, checkpoints=policy)
    if replay_from and provider is None:
        provider = "replay"
    if strategy is not None:
        strategies.get(strategy)  # an unknown name is a usage error (exit 2), before any run starts
    software = software_config(  # an unknown check name is a usage error too
        verify=verify,
        block_on=block_on,
        warn_only=warn_only,
        tests=tests,
        write_files=write_files,
        output=output,
        overwrite=overwrite,
    )
    config = RunConfig(
        goal,
        (*vaults, *backends),
        strategy=strategy,
        provider=provider,
        models=_models(models),
        max_parallel=max_parallel,
        max_llm=max_llm,
        concurrency_mode=concurrency_mode,
        history_dir=history_dir,
        include_history=include_history,
        code_mode=not no_code_mode,
        garden=garden,
        learn=learn,
        profile=profile,
        fs_read=fs_read,
        net_allow=net_allow,
        offline=offline,
        voice=voice,
        on_exhausted=on_exhausted,
        checkpoint_on=tuple(s.strip() for item in checkpoint_on for s in item.split(",") if s.strip()),
        budgets=Budgets(
            max_depth=max_depth,
            max_nodes=max_nodes,
            max_wall_time=max_time,
            max_tokens=max_tokens,
            max_usd=max_usd,
        ),
        prices=_prices(prices),
        replay_from=replay_from,
        use_cache=not no_cache,
        refresh_cache=refresh_cache,
        store_url=redis_url,
        cache_ttls=_ttls(cache_ttls),
        checkpoints=policy,
        **software,
    )
    decider = TerminalDecider() if policy == "ask" else None
    live_view = err.is_terminal and not as_json
    tree = LiveTree()  # folds the events in (and so knows the run's id, should Ctrl-C stop it)

    async def go() -> Run:
        if not live_view:
            return await arun(config, decider=decider, on_event=tree.apply)
        # its own console, which wraps: the live tree's lines wrap at word boundaries instead of being cut
        console = Console(stderr=True, highlight=False)
        with Live(console=console, refresh_per_second=8, transient=True, get_renderable=tree.render) as live:
            if decider is not None:
                decider.live = live  # a question on the terminal puts the live view aside
            return await arun(config, decider=decider, on_event=tree.apply)

    run = interruptible(lambda: asyncio.run(go()), lambda: tree.run_id)
    if live_view:
        show(err, render_tree(run.dag, f"shad {run.id}", notes=tree.notes))
    return print_outcome(run, as_json)


def interruptible(work: Callable[[], Run], run_id: Callable[[], str]) -> Run:
    """``work()``; on Ctrl-C one line saying how to continue the run (asyncio cancels the run, which
    closes as PARTIAL and resumable) instead of a traceback, and exit code 130 as before."""
    try:
        return work()
    except KeyboardInterrupt:
        stopped = run_id()
        if not stopped:  # Ctrl-C before the run started: there is nothing to continue
            err.print("shad: interrupted before the run started")
            raise click.exceptions.Exit(130) from None
        status, command = "stopped", f"shad resume {stopped}"
        try:
            run = Run.load(stopped)
            status = f"stopped {run.status.value}"
            command = run.summary.get("resume_command") or command
        except ShadError:  # a history cut short mid-write: its id still names the resume command
            pass
        err.print(
            f"shad: interrupted: run {escape(stopped)} {status}; to continue: [bold]{escape(command)}[/]"
        )
        raise click.exceptions.Exit(130) from None


def print_outcome(run: Run, as_json: bool) -> int:
    """The report (or the summary JSON) on stdout, one status line on stderr; returns the exit code."""
    if as_json:
        print_json(run.summary)
        return run.exit_code
    _print_report(run)
    metrics = run.summary["metrics"]
    cached = f" · {metrics['cache_hits']} from the cache" if metrics.get("cache_hits") else ""
    # A provider that reported more usage than it was allowed: said here, not only in the report's note.
    over = run.summary.get("over_budget")
    over_by = f" · [bold red]over budget by {over['over_by']} tokens[/]" if over else ""
    err.print(
        f"[bold]{run.status.value}[/] · {metrics['total_tokens']} tokens{over_by} · "
        f"{metrics['llm_calls']} model calls{cached} · provider {escape(run.provider_name)} · "
        f"report: {escape(run.report_path)}"
    )
    if run.summary.get("resume_command"):
        err.print(f"to continue: [bold]{escape(run.summary['resume_command'])}[/]")
    return run.exit_code


def _print_report(run: Run) -> None:
    """Rendered on a terminal; the plain markdown (without frontmatter) when piped or redirected."""
    show_markdown(out, run.report.split("\n---\n", 1)[-1].lstrip("\n"))
