"""Parsing ``%%shad run`` and ``%shad SUBCOMMAND`` lines: quoting-aware (``shlex``), the same options as
``shad run``, and every mistake a ``ShadUsageError`` that says what was wrong and how to write it."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from engine.config import remote_scheme

from ._errors import ShadUsageError
from ._result import FORMATS
from ._software import add_software_arguments, software_options

__all__ = [
    "CHECKPOINT_POLICIES",
    "FORMATS",
    "SUBCOMMANDS",
    "RunArgs",
    "extra_tokens",
    "interpolate",
    "parse_config_pairs",
    "parse_run",
    "parse_subcommand",
    "split_line",
]

SUBCOMMANDS = (
    "run",
    "status",
    "trace",
    "resume",
    "export",
    "runs",
    "search",
    "analyze",
    "config",
    "providers",
    "checkpoint",
    "ingest",
    "sources",
    "approvals",
    "learnings",
    "skills",
)
# What a run does when it needs a human (shad_magics._checkpoints maps them to the engine's policies).
CHECKPOINT_POLICIES = ("auto", "fail", "approve", "skip", "pause", "off")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and calling ``sys.exit`` (which would kill a
    kernel's cell with SystemExit)."""

    def error(self, message: str) -> NoReturn:
        raise ShadUsageError(f"{self.prog}: {message}", hint=self.format_usage().strip())

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise ShadUsageError(message or f"{self.prog}: bad arguments", hint=self.format_usage().strip())


def split_line(line: str) -> list[str]:
    """Shell-like words: ``--vault "My Vault"`` is one value."""
    try:
        return shlex.split(line, posix=True)
    except ValueError as exc:  # an unclosed quote
        raise ShadUsageError(
            f"cannot parse {line!r}: {exc}", hint='close the quote: --vault "My Vault"'
        ) from exc


@dataclass
class RunArgs:
    """A parsed ``%%shad run`` line. ``options`` holds only the engine options given on the line
    (``RunConfig`` and ``Budgets`` field names), so session defaults fill the rest."""

    vaults: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    background: bool = False
    vars: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    format: str | None = None
    widget: bool = True
    checkpoints: str | None = None  # a CHECKPOINT_POLICIES name; None: the session's
    help: bool = False


def _run_parser() -> _Parser:
    p = _Parser(prog="%%shad run", add_help=False, allow_abbrev=False)
    add = p.add_argument
    add("--vault", action="append", default=[], metavar="DIR", help="Vault folder (repeatable).")
    add(
        "--backend",
        action="append",
        default=[],
        metavar="mcp:COMMAND",
        help="A vault read through an MCP server (repeatable; after the --vault folders).",
    )
    add("--strategy", help="software, research, analysis, planning or creative (default: classified).")
    add("--max-depth", type=int, help="Deepest decomposition level.")
    add("--max-nodes", type=int, help="Most nodes in the DAG.")
    add("--max-time", type=float, help="Wall-time budget in seconds.")
    add("--max-tokens", type=int, help="Token budget.")
    add("--max-usd", type=float, help="Stop once the model calls cost this much (needs --price).")
    add("--price", action="append", default=[], metavar="MODEL=IN:OUT", help="USD per million tokens.")
    add("--max-parallel", type=int, help="Nodes worked on at once.")
    add("--max-llm", type=int, help="Model calls in flight.")
    add("--concurrency-mode", choices=("adaptive", "fixed"))
    add("--provider", help="anthropic, openai, claude-code, offline or replay (default: the session's).")
    add("--model", action="append", default=[], metavar="TIER=ID", help="Model id for a tier.")
    add("--history-dir", help="Where the run's history goes (default: <vault>/Shad/History/Runs).")
    add("--include-history", action="store_true", default=None, help="Let retrieval cite earlier runs.")
    add("--no-code-mode", action="store_true", help="Search directly instead of retrieval scripts.")
    add("--garden", action="store_true", help="Propose types for untyped notes read (shad approvals).")
    add("--learn", action="store_true", help="Propose the answer as a learning note.")
    add("--profile", choices=("strict", "local", "extended"), help="Sandbox profile.")
    add("--fs-read", action="append", default=[], metavar="DIR", help="With --profile local: a folder.")
    add("--net-allow", action="append", default=[], metavar="HOST", help="With --profile extended: a host.")
    add("--offline", action="store_true", help="Refuse every external call, even with API keys set.")
    add("--voice", metavar="NAME", help="Render the final report in this voice.")
    add("--checkpoint-on", action="append", default=[], metavar="STAGE", help="Checkpoint these stages.")
    add("--from", dest="replay_from", metavar="RUN_ID", help="With --provider replay: the run to replay.")
    add("--no-cache", action="store_true", help="Neither read nor write the cache.")
    add("--refresh-cache", action="store_true", help="Recompute everything and overwrite the cache.")
    add("--redis", dest="store_url", metavar="URL", help="Cache and ledger on this Redis.")
    add("--cache-ttl", action="append", default=[], metavar="VAULT=TTL", help="A vault's cache TTL (7d).")
    add(
        "--checkpoints",
        type=str.lower,
        choices=CHECKPOINT_POLICIES,
        help="When the run needs a human: auto (pause if a person can click, else fail), fail, approve, "
        "skip or pause (default: the session's).",
    )
    add_software_arguments(p)
    add("-o", "--output", metavar="NAME", help="Bind the result to NAME in the notebook.")
    add("--background", action="store_true", help="Return a RunHandle at once.")
    add("--vars", default="", metavar="A,B", help="Notebook variables to put into the goal as {A}.")
    add("--context", action="append", default=[], metavar="VAR_OR_PATH", help="Extra context (repeatable).")
    add("-f", "--format", choices=FORMATS, help="How the result renders (default: markdown).")
    add("--no-widget", action="store_true", help="Do not show the live DAG explorer.")
    add("-h", "--help", action="store_true", help="Show this help.")
    return p


RUN_HELP = _run_parser().format_help()


def _pairs(items: Sequence[str], what: str, example: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ShadUsageError(f"{what} takes {example.split()[0]}, got {item!r}", hint=f"e.g. {example}")
        out.append((key.strip(), value.strip()))
    return out


def _backends(specs: Sequence[str]) -> list[str]:
    for spec in specs:
        if remote_scheme(spec) is None:
            raise ShadUsageError(
                f"--backend {spec!r} names no backend", hint='e.g. --backend "mcp:shad mcp serve --vault DIR"'
            )
    return list(specs)


def parse_run(line: str) -> RunArgs:
    """``run [options]`` (the word ``run`` already removed or not) -> ``RunArgs``."""
    words = split_line(line)
    if words and words[0] == "run":
        words = words[1:]
    ns = _run_parser().parse_args(words)
    args = RunArgs(
        vaults=[*ns.vault, *_backends(ns.backend)],
        output=ns.output,
        background=ns.background,
        context=list(ns.context),
        format=ns.format,
        widget=not ns.no_widget,
        checkpoints=ns.checkpoints,
        help=ns.help,
    )
    if ns.output is not None and not _NAME.match(ns.output):
        raise ShadUsageError(f"-o takes a Python name, got {ns.output!r}", hint="e.g. -o result")
    args.vars = [v.strip() for v in ns.vars.split(",") if v.strip()]
    for name in args.vars:
        if not _NAME.match(name):
            raise ShadUsageError(f"--vars takes Python names, got {name!r}", hint="e.g. --vars topic,year")
    opts: dict[str, Any] = {}
    simple = {
        "strategy": "strategy",
        "max_depth": "max_depth",
        "max_nodes": "max_nodes",
        "max_time": "max_wall_time",
        "max_tokens": "max_tokens",
        "max_usd": "max_usd",
        "max_parallel": "max_parallel",
        "max_llm": "max_llm",
        "concurrency_mode": "concurrency_mode",
        "provider": "provider",
        "history_dir": "history_dir",
        "include_history": "include_history",
        "profile": "profile",
        "voice": "voice",
        "replay_from": "replay_from",
        "store_url": "store_url",
    }
    for dest, name in simple.items():
        value = getattr(ns, dest)
        if value is not None:
            opts[name] = value
    if ns.fs_read:
        opts["fs_read"] = tuple(ns.fs_read)
    if ns.net_allow:
        opts["net_allow"] = tuple(ns.net_allow)
    if ns.offline:
        opts["offline"] = True
    if ns.checkpoint_on:
        opts["checkpoint_on"] = tuple(s.strip() for i in ns.checkpoint_on for s in i.split(",") if s.strip())
    if ns.garden:
        opts["garden"] = True
    if ns.learn:
        opts["learn"] = True
    if ns.no_code_mode:
        opts["code_mode"] = False
    if ns.no_cache:  # only when given: the engine's defaults stay the engine's
        opts["use_cache"] = False
    if ns.refresh_cache:
        opts["refresh_cache"] = True
    if ns.model:
        opts["models"] = {
            k.lower(): v for k, v in _pairs(ns.model, "--model", "TIER=ID leaf=claude-haiku-4-5")
        }
    if ns.price:
        opts["prices"] = {m: _rates(m, r) for m, r in _pairs(ns.price, "--price", "MODEL=IN:OUT m=3:15")}
    if ns.cache_ttl:
        opts["cache_ttls"] = {v: _ttl(t) for v, t in _pairs(ns.cache_ttl, "--cache-ttl", "VAULT=TTL docs=7d")}
    opts.update(software_options(ns))
    if ns.replay_from and "provider" not in opts:
        opts["provider"] = "replay"  # as `shad run --from`: replaying is the only use of a recorded run
    args.options = opts
    return args


def _rates(model: str, text: str) -> tuple[float, float]:
    try:
        rate_in, rate_out = (float(x) for x in text.split(":"))
    except ValueError as exc:
        raise ShadUsageError(
            f"--price {model}= takes IN:OUT (USD per million tokens), got {text!r}",
            hint="e.g. --price m=3:15",
        ) from exc
    return rate_in, rate_out


def _ttl(text: str) -> float:
    from engine.runs.cache import parse_ttl

    try:
        return parse_ttl(text)
    except ValueError as exc:
        raise ShadUsageError(f"bad --cache-ttl: {exc}", hint="e.g. --cache-ttl docs=7d") from exc


def interpolate(goal: str, names: Sequence[str], namespace: Mapping[str, Any]) -> str:
    """Put the named notebook variables into ``{name}`` places of the goal. Only names listed in
    ``--vars`` are touched: every other brace stays as written."""
    for name in names:
        if name not in namespace:
            raise ShadUsageError(
                f"--vars names {name!r}, which is not defined in the notebook",
                hint=f"define it first ({name} = ...) or drop it from --vars",
            )
    if not names:
        return goal
    pattern = re.compile(r"\{(" + "|".join(re.escape(n) for n in names) + r")\}")
    return pattern.sub(lambda m: str(namespace[m.group(1)]), goal)


def _sub_parsers() -> dict[str, _Parser]:
    parsers: dict[str, _Parser] = {}

    def new(name: str) -> _Parser:
        parsers[name] = _Parser(prog=f"%shad {name}", add_help=False, allow_abbrev=False)
        return parsers[name]

    new("status").add_argument("run_id")
    p = new("trace")
    p.add_argument("run_id")
    p.add_argument("node", nargs="?")
    p = new("resume")
    p.add_argument("run_id")
    p.add_argument("--budget", metavar="+N|+P%", help="More tokens: +20000, or +25%% of the original budget.")
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--max-depth", type=int)
    p.add_argument("--replay", metavar="NODE|subtree:NODE|stale")
    p.add_argument("--hint", metavar="TEXT", help="One more retrieval round for nodes whose retries ran out.")
    _resume_options(p)
    p = new("checkpoint")
    p.add_argument("run_id")
    p.add_argument("node", nargs="?")
    decision = p.add_mutually_exclusive_group()  # one decision; argparse says so when two are given
    flag = decision.add_argument
    flag("--approve", dest="action", action="store_const", const="approve", help="Go on with what was found.")
    flag("--edit", metavar="NOTES", help="Use these notes (wikilinks or paths, comma-separated) instead.")
    flag("--hint", metavar="TEXT", help="A hint for one more retrieval round.")
    flag("--skip", dest="action", action="store_const", const="skip", help="Skip the node.")
    flag("--stop", dest="action", action="store_const", const="stop", help="Stop the run.")
    _resume_options(p)
    p = new("export")
    p.add_argument("run_id")
    p.add_argument("dir")
    p.add_argument("--overwrite", action="store_true", help="Replace existing files of a software run.")
    new("runs").add_argument("--limit", type=int, default=20)
    p = new("search")
    p.add_argument("query", nargs="+")
    p.add_argument("--vault", action="append", default=[], metavar="DIR")
    p.add_argument("--limit", type=int, default=10)
    p = new("analyze")  # with a run id: that run's analysis; without: the vault's gap analysis
    p.add_argument("run_id", nargs="?")
    p.add_argument("--vault", action="append", default=[], metavar="DIR")
    p.add_argument("--llm-audit", action="store_true")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--no-write", action="store_true")
    new("config").add_argument("pairs", nargs="*", metavar="KEY=VALUE")
    new("providers")
    p = new("approvals")  # the approval queue (shad_magics._curation_lines)
    p.add_argument("action", nargs="?", choices=("approve", "reject", "log"))
    p.add_argument("id", nargs="?", type=int, help="The approval to decide (or, with log, to list).")
    p.add_argument("--note", default="", help="A note kept with the decision.")
    p.add_argument("--all", action="store_true", help="List decided requests too.")
    p.add_argument("--vault", metavar="DIR", help="Only this vault's requests.")
    p = new("skills")
    p.add_argument("name", nargs="?", help="One skill, shown with its guidance.")
    p.add_argument("--goal", help="Which skills this goal would use, candidate by candidate.")
    p.add_argument("--vault", action="append", default=[], metavar="DIR")
    p = new("learnings")
    p.add_argument("--vault", metavar="DIR", help="The vault (default: the session's first).")
    p.add_argument("--status", choices=("staging", "verified", "rejected"))
    p = new("ingest")
    p.add_argument("source", metavar="PATH_OR_URL")
    p.add_argument("--vault", metavar="DIR", help="The vault (default: the session's first).")
    p.add_argument("--preset", choices=("mirror", "docs", "deep"), default="docs")
    p.add_argument("--domain", metavar="NAME", help="The folder under Sources/ (default: host or local).")
    p.add_argument("-y", "--yes", action="store_true", help="The confirmation: write the snapshot.")
    new("sources").add_argument("source_id", nargs="?")
    return parsers


def _resume_options(p: _Parser) -> None:
    """Options of a subcommand that continues a run (resume, checkpoint)."""
    p.add_argument("--checkpoints", type=str.lower, choices=CHECKPOINT_POLICIES)
    p.add_argument("-o", "--output", metavar="NAME")
    p.add_argument("-f", "--format", choices=FORMATS)
    p.add_argument("--background", action="store_true")
    p.add_argument("--no-widget", action="store_true")


def parse_subcommand(line: str) -> tuple[str, argparse.Namespace]:
    """``%shad SUB ...`` -> (SUB, its arguments). Bare ``%shad`` or an unknown SUB is a usage error
    that lists the subcommands."""
    words = split_line(line)
    listing = "subcommands: " + ", ".join(SUBCOMMANDS[1:]) + " (and the cell magic %%shad run)"
    if not words:
        raise ShadUsageError("%shad needs a subcommand", hint=listing)
    sub, rest = words[0], words[1:]
    parsers = _sub_parsers()
    if sub == "run":
        raise ShadUsageError("run is a cell magic: the cell body is the goal", hint="%%shad run [options]")
    if sub not in parsers:
        raise ShadUsageError(f"unknown subcommand {sub!r}", hint=listing)
    ns = parsers[sub].parse_args(rest)
    if getattr(ns, "output", None) is not None and not _NAME.match(ns.output):
        raise ShadUsageError(f"-o takes a Python name, got {ns.output!r}", hint="e.g. -o result")
    if sub in ("runs", "search") and ns.limit < 1:
        raise ShadUsageError(f"--limit must be at least 1 (got {ns.limit})")
    if sub == "checkpoint":  # one (action, text) whichever option gave it
        for name in ("edit", "hint"):
            if getattr(ns, name) is not None:
                ns.action, ns.text = name, getattr(ns, name)
        if ns.action is None or ns.action in ("approve", "skip", "stop"):
            ns.text = ""
    return sub, ns


def parse_config_pairs(words: Sequence[str]) -> list[tuple[str, str]]:
    """``key=value`` words, in order (``vault=A vault=B`` keeps both)."""
    return _pairs(words, "%shad config", "KEY=VALUE provider=offline")


def extra_tokens(base_max_tokens: int, budget: str | None) -> int:
    """``--budget +20000`` or ``+25%`` (of ``base_max_tokens``) -> tokens to add (the engine's rule)."""
    from engine.errors import UsageError
    from engine.runs.budget import extra_tokens as engine_extra_tokens

    try:
        return engine_extra_tokens(budget, base_max_tokens)
    except UsageError as exc:
        raise ShadUsageError(exc.message, hint=exc.hint) from None
