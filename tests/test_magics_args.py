"""Parsing ``%%shad run`` / ``%shad`` lines (shad_magics._args): quoting, options, --vars, subcommands."""

from __future__ import annotations

import pytest

from engine.errors import UsageError
from shad_magics import ShadUsageError
from shad_magics._args import (
    RUN_HELP,
    SUBCOMMANDS,
    extra_tokens,
    interpolate,
    parse_config_pairs,
    parse_run,
    parse_subcommand,
    split_line,
)


def test_quoted_values_stay_one_word() -> None:
    args = parse_run("run --vault \"My Vault\" --vault '/tmp/other vault' --strategy research")
    assert args.vaults == ["My Vault", "/tmp/other vault"]
    assert args.options == {"strategy": "research"}


def test_unclosed_quote_is_a_usage_error() -> None:
    with pytest.raises(ShadUsageError, match="cannot parse") as info:
        split_line('--vault "My Vault')
    assert "quote" in (info.value.hint or "")


def test_engine_options_map_to_config_and_budget_fields() -> None:
    args = parse_run(
        "run --max-depth 2 --max-nodes 9 --max-time 30 --max-tokens 5000 --max-usd 0.5 --price m=3:15 "
        "--max-parallel 3 --max-llm 1 --concurrency-mode fixed --provider offline --model leaf=small "
        "--history-dir /tmp/h --include-history --no-code-mode --profile local --no-cache --refresh-cache "
        "--redis redis://localhost:6379/0 --cache-ttl docs=7d"
    )
    assert args.options == {
        "max_depth": 2,
        "max_nodes": 9,
        "max_wall_time": 30.0,
        "max_tokens": 5000,
        "max_usd": 0.5,
        "prices": {"m": (3.0, 15.0)},
        "max_parallel": 3,
        "max_llm": 1,
        "concurrency_mode": "fixed",
        "provider": "offline",
        "models": {"leaf": "small"},
        "history_dir": "/tmp/h",
        "include_history": True,
        "code_mode": False,
        "profile": "local",
        "use_cache": False,
        "refresh_cache": True,
        "store_url": "redis://localhost:6379/0",
        "cache_ttls": {"docs": 7 * 86400.0},
    }


def test_options_not_given_are_left_to_the_session_and_engine() -> None:
    args = parse_run("run")
    assert args.options == {}
    assert (args.output, args.background, args.format, args.widget, args.vars, args.context) == (
        None,
        False,
        None,
        True,
        [],
        [],
    )


def test_notebook_options() -> None:
    args = parse_run(
        "run -o res --background --vars a,b --context df --context 'notes dir' -f json --no-widget"
    )
    assert (args.output, args.background, args.format, args.widget) == ("res", True, "json", False)
    assert args.vars == ["a", "b"]
    assert args.context == ["df", "notes dir"]
    assert parse_run("run --vars ' a , b '").vars == ["a", "b"]


def test_stray_words_and_unknown_options_are_usage_errors() -> None:
    with pytest.raises(ShadUsageError, match="unrecognized arguments"):
        parse_run("run --vars a, b")
    with pytest.raises(ShadUsageError, match="unrecognized arguments: --colour") as info:
        parse_run("run --colour red")
    assert "%%shad run" in (info.value.hint or "")
    with pytest.raises(ShadUsageError, match="invalid int value"):
        parse_run("run --max-tokens lots")
    with pytest.raises(ShadUsageError, match="invalid choice"):
        parse_run("run -f yaml")


def test_checkpoint_policy_option() -> None:
    assert parse_run("run").checkpoints is None  # the session's
    for policy in ("auto", "fail", "approve", "skip", "pause", "off"):
        args = parse_run(f"run --checkpoints {policy.upper()}")
        assert args.checkpoints == policy and "checkpoints" not in args.options  # mapped by the magic
    with pytest.raises(ShadUsageError, match="invalid choice: 'ask'"):
        parse_run("run --checkpoints ask")  # nothing in a notebook may block a cell on a prompt
    assert "--checkpoints {auto,fail,approve,skip,pause,off}" in RUN_HELP


def test_checkpoint_subcommand() -> None:
    sub, ns = parse_subcommand("checkpoint R")
    assert (sub, ns.run_id, ns.node, ns.action, ns.text) == ("checkpoint", "R", None, None, "")
    for flag in ("approve", "skip", "stop"):
        ns = parse_subcommand(f"checkpoint R n1 --{flag}")[1]
        assert (ns.node, ns.action, ns.text) == ("n1", flag, "")
    ns = parse_subcommand('checkpoint R n1 --hint "look in Payments, not Billing"')[1]
    assert (ns.action, ns.text) == ("hint", "look in Payments, not Billing")
    ns = parse_subcommand("checkpoint R --edit '[[Auth/OAuth]], API/Contract.md' -o res --checkpoints pause")[
        1
    ]
    assert (ns.node, ns.action, ns.text, ns.output, ns.checkpoints) == (
        None,
        "edit",
        "[[Auth/OAuth]], API/Contract.md",
        "res",
        "pause",
    )
    assert parse_subcommand("resume R --checkpoints fail")[1].checkpoints == "fail"
    assert parse_subcommand('resume R --hint "look in Physics/"')[1].hint == "look in Physics/"
    assert parse_subcommand("resume R")[1].hint is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("checkpoint R --approve --skip", "not allowed with argument"),
        ("checkpoint R --hint", "expected one argument"),
        ("checkpoint R n1 n2", "unrecognized arguments: n2"),
        ("checkpoint", "the following arguments are required: run_id"),
        ("checkpoint R --checkpoints sometimes", "invalid choice"),
    ],
)
def test_checkpoint_subcommand_errors(line: str, message: str) -> None:
    with pytest.raises(ShadUsageError, match=message):
        parse_subcommand(line)


def test_from_implies_the_replay_provider() -> None:
    assert parse_run("run --from 20260101-000000-abcd").options == {
        "replay_from": "20260101-000000-abcd",
        "provider": "replay",
    }
    assert parse_run("run --from X --provider offline").options["provider"] == "offline"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("run -o 'not a name'", "-o takes a Python name"),
        ("run --vars 1x", "--vars takes Python names"),
        ("run --model leaf", "--model takes TIER=ID"),
        ("run --price m=3", "--price m= takes IN:OUT"),
        ("run --cache-ttl docs=soon", "bad --cache-ttl"),
    ],
)
def test_bad_values(line: str, message: str) -> None:
    with pytest.raises(ShadUsageError, match=message):
        parse_run(line)


def test_usage_errors_are_engine_usage_errors() -> None:
    with pytest.raises(UsageError) as info:
        parse_run("run --nope")
    assert info.value.exit_code == 2
    assert info.value._render_traceback_()[0].startswith("ShadUsageError: %%shad run:")  # type: ignore[attr-defined]


def test_interpolate_only_listed_names() -> None:
    ns = {"x": "espresso", "n": 3}
    assert interpolate("{x} for {n} days, not {y} or {{x}}", ["x", "n"], ns) == (
        "espresso for 3 days, not {y} or {espresso}"
    )
    assert interpolate("{x} stays", [], ns) == "{x} stays"


def test_interpolate_missing_variable() -> None:
    with pytest.raises(ShadUsageError, match="--vars names 'topic', which is not defined"):
        interpolate("about {topic}", ["topic"], {})


def test_subcommands() -> None:
    assert parse_subcommand("status 20260101-000000-abcd")[1].run_id == "20260101-000000-abcd"
    sub, ns = parse_subcommand("trace R n1")
    assert (sub, ns.run_id, ns.node) == ("trace", "R", "n1")
    assert parse_subcommand("trace R")[1].node is None
    sub, ns = parse_subcommand('search rest beans "after roasting" --vault "My Vault" --limit 3')
    assert (ns.query, ns.vault, ns.limit) == (["rest", "beans", "after roasting"], ["My Vault"], 3)
    sub, ns = parse_subcommand("resume R --budget +25% -o again -f text --background --no-widget")
    assert (ns.budget, ns.output, ns.format, ns.background, ns.no_widget) == (
        "+25%",
        "again",
        "text",
        True,
        True,
    )
    assert parse_subcommand("export R '/tmp/out dir'")[1].dir == "/tmp/out dir"
    assert parse_subcommand("runs --limit 5")[1].limit == 5
    assert parse_subcommand("config vault=A provider=offline")[1].pairs == ["vault=A", "provider=offline"]
    assert parse_subcommand("providers")[0] == "providers"
    assert parse_subcommand("analyze R")[1].run_id == "R"


@pytest.mark.parametrize("line", ["", "   ", "frobnicate", "help"])
def test_bare_or_unknown_subcommand_lists_them(line: str) -> None:
    with pytest.raises(ShadUsageError) as info:
        parse_subcommand(line)
    for sub in SUBCOMMANDS[1:]:
        assert sub in (info.value.hint or "")


def test_run_as_a_line_magic_points_to_the_cell_magic() -> None:
    with pytest.raises(ShadUsageError, match="cell magic"):
        parse_subcommand("run --vault x")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("status", "the following arguments are required: run_id"),
        ("runs --limit 0", "--limit must be at least 1"),
        ("search", "the following arguments are required: query"),
        ("resume R -o 1bad", "-o takes a Python name"),
    ],
)
def test_subcommand_errors(line: str, message: str) -> None:
    with pytest.raises(ShadUsageError, match=message):
        parse_subcommand(line)


def test_config_pairs() -> None:
    assert parse_config_pairs(["vault=A", "vault=B C", "provider=offline"]) == [
        ("vault", "A"),
        ("vault", "B C"),
        ("provider", "offline"),
    ]
    with pytest.raises(ShadUsageError, match="KEY=VALUE"):
        parse_config_pairs(["provider"])


def test_extra_tokens() -> None:
    assert extra_tokens(20000, None) == 0
    assert extra_tokens(20000, "+25%") == 5000
    assert extra_tokens(20000, "+3000") == 3000
    assert extra_tokens(20000, "4000") == 4000
    with pytest.raises(ShadUsageError, match="--budget takes"):
        extra_tokens(20000, "+lots")
    with pytest.raises(ShadUsageError, match="adds tokens"):
        extra_tokens(20000, "-5%")


def test_backend_vaults_follow_the_folders() -> None:
    args = parse_run('run --backend "mcp:shad mcp serve --vault /tmp/v" --vault Notes')
    assert args.vaults == ["Notes", "mcp:shad mcp serve --vault /tmp/v"]
    with pytest.raises(ShadUsageError, match="names no backend"):
        parse_run("run --backend 'shad mcp serve'")


def test_reach_and_offline_options() -> None:
    args = parse_run("run --profile extended --fs-read /tmp --net-allow example.org --offline")
    assert args.options["fs_read"] == ("/tmp",) and args.options["net_allow"] == ("example.org",)
    assert args.options["offline"] is True and args.options["profile"] == "extended"
    assert "offline" not in parse_run("run").options


def test_checkpoint_on_stages() -> None:
    args = parse_run("run --checkpoint-on gather_evidence,analyze --checkpoint-on conclude")
    assert args.options["checkpoint_on"] == ("gather_evidence", "analyze", "conclude")
