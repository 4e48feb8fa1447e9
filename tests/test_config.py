"""``RunConfig`` and ``Budgets``: validated on construction, vault paths resolved, dict round trip."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine.config import Budgets, RunConfig
from engine.errors import ShadError, UsageError, VaultNotFoundError


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "A.md").write_text("# A\n\ntext\n", encoding="utf-8")
    return root


# --- the goal and the vaults -------------------------------------------------------------------------------


@pytest.mark.parametrize("goal", ["", "   ", "\n\t"])
def test_an_empty_goal_is_a_usage_error(vault: Path, goal: str) -> None:
    with pytest.raises(UsageError) as err:
        RunConfig(goal, (str(vault),))
    assert "goal" in err.value.message
    assert err.value.hint  # says what to do next
    assert err.value.exit_code == 2


def test_a_goal_that_is_not_a_string_is_a_usage_error(vault: Path) -> None:
    with pytest.raises(UsageError):
        RunConfig(None, (str(vault),))  # type: ignore[arg-type]


def test_a_missing_vault_folder_raises_vault_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(VaultNotFoundError) as err:
        RunConfig("How?", (str(missing),))
    assert "nowhere" in err.value.message
    assert err.value.exit_code == 2


def test_a_vault_that_is_a_file_raises_vault_not_found(vault: Path) -> None:
    with pytest.raises(VaultNotFoundError):
        RunConfig("How?", (str(vault / "A.md"),))


def test_a_missing_second_vault_is_caught_too(vault: Path, tmp_path: Path) -> None:
    with pytest.raises(VaultNotFoundError):
        RunConfig("How?", (str(vault), str(tmp_path / "gone")))


def test_no_vault_at_all_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        RunConfig("How?", ())


def test_vault_paths_are_resolved_to_absolute_paths(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    link = tmp_path / "link-to-notes"
    link.symlink_to(vault)
    config = RunConfig("How?", ("notes", str(link), "./notes/../notes"))
    real = str(vault.resolve())
    assert config.vaults == (real, real, real)
    assert all(os.path.isabs(v) for v in config.vaults)


def test_a_tilde_vault_path_is_expanded(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(vault.parent))
    config = RunConfig("How?", ("~/notes",))
    assert config.vaults == (str(vault.resolve()),)


def test_a_single_vault_given_as_a_string_or_path_becomes_a_tuple(vault: Path) -> None:
    assert RunConfig("How?", str(vault)).vaults == (str(vault.resolve()),)  # type: ignore[arg-type]
    assert RunConfig("How?", vault).vaults == (str(vault.resolve()),)  # type: ignore[arg-type]


def test_vaults_keep_their_priority_order(tmp_path: Path) -> None:
    first, second = tmp_path / "b-first", tmp_path / "a-second"
    first.mkdir()
    second.mkdir()
    config = RunConfig("How?", [str(first), str(second)])  # type: ignore[arg-type]
    assert config.vaults == (str(first.resolve()), str(second.resolve()))


# --- options -----------------------------------------------------------------------------------------------


def test_known_model_tiers_are_accepted(vault: Path) -> None:
    models = {"orchestrator": "big", "worker": "mid", "leaf": "small", "judge": "mid"}
    assert RunConfig("How?", (str(vault),), models=models).models == models


@pytest.mark.parametrize("tier", ["boss", "WORKERS", ""])
def test_an_unknown_model_tier_is_a_usage_error(vault: Path, tier: str) -> None:
    with pytest.raises(UsageError) as err:
        RunConfig("How?", (str(vault),), models={tier: "some-model"})
    assert "tier" in err.value.message


@pytest.mark.parametrize("profile", ["strict", "local", "extended"])
def test_known_profiles_are_accepted(vault: Path, profile: str) -> None:
    assert RunConfig("How?", (str(vault),), profile=profile).profile == profile


@pytest.mark.parametrize("profile", ["lenient", "", "STRICT"])
def test_an_unknown_profile_is_a_usage_error(vault: Path, profile: str) -> None:
    with pytest.raises(UsageError) as err:
        RunConfig("How?", (str(vault),), profile=profile)
    assert "profile" in err.value.message


@pytest.mark.parametrize("mode", ["adaptive", "fixed"])
def test_known_concurrency_modes_are_accepted(vault: Path, mode: str) -> None:
    assert RunConfig("How?", (str(vault),), concurrency_mode=mode).concurrency_mode == mode


@pytest.mark.parametrize("mode", ["auto", "", "Fixed"])
def test_an_unknown_concurrency_mode_is_a_usage_error(vault: Path, mode: str) -> None:
    with pytest.raises(UsageError) as err:
        RunConfig("How?", (str(vault),), concurrency_mode=mode)
    assert "concurrency" in err.value.message


@pytest.mark.parametrize("name", ["max_parallel", "max_llm"])
@pytest.mark.parametrize("value", [0, -1, 1.5, "4", True, None])
def test_parallelism_limits_must_be_whole_numbers_of_at_least_one(vault: Path, name: str, value: Any) -> None:
    with pytest.raises(UsageError):
        RunConfig("How?", (str(vault),), **{name: value})


def test_defaults_are_sensible(vault: Path) -> None:
    config = RunConfig("How?", (str(vault),))
    assert config.profile == "strict"
    assert config.concurrency_mode == "adaptive"
    assert config.include_history is False
    assert config.budgets == Budgets()
    assert config.max_parallel >= config.max_llm >= 1


# --- budgets -----------------------------------------------------------------------------------------------


def test_budget_defaults_match_the_mission() -> None:
    b = Budgets()
    assert (b.max_depth, b.max_nodes, b.max_wall_time, b.max_tokens, b.max_usd) == (
        3,
        50,
        300.0,
        100_000,
        None,
    )


@pytest.mark.parametrize("name", ["max_depth", "max_nodes", "max_branching", "max_tokens"])
@pytest.mark.parametrize("value", [0, -5])
def test_budgets_below_one_are_rejected(name: str, value: int) -> None:
    with pytest.raises(UsageError) as err:
        Budgets(**{name: value})
    assert name in err.value.message


@pytest.mark.parametrize("name", ["max_depth", "max_nodes", "max_branching", "max_tokens"])
def test_a_bool_is_not_a_whole_number_for_budgets(name: str) -> None:
    with pytest.raises(UsageError):
        Budgets(**{name: True})


@pytest.mark.parametrize("name", ["max_depth", "max_nodes", "max_branching", "max_tokens"])
@pytest.mark.parametrize("value", [2.5, "10", None])
def test_budgets_must_be_ints(name: str, value: Any) -> None:
    with pytest.raises(UsageError):
        Budgets(**{name: value})


@pytest.mark.parametrize("tokens", [1, 500, 999])
def test_max_tokens_below_1000_is_rejected_with_a_hint(tokens: int) -> None:
    with pytest.raises(UsageError) as err:
        Budgets(max_tokens=tokens)
    assert err.value.hint and "1000" in err.value.hint


def test_max_tokens_of_exactly_1000_is_accepted() -> None:
    assert Budgets(max_tokens=1000).max_tokens == 1000


def test_max_depth_above_ten_is_rejected_but_ten_is_fine() -> None:
    assert Budgets(max_depth=10).max_depth == 10
    with pytest.raises(UsageError) as err:
        Budgets(max_depth=11)
    assert err.value.hint


@pytest.mark.parametrize("seconds", [0, -1.0, float("nan"), "300", True, None])
def test_wall_time_must_be_positive_seconds(seconds: Any) -> None:
    with pytest.raises(UsageError):
        Budgets(max_wall_time=seconds)


@pytest.mark.parametrize("usd", [0, -0.01, "1", True])
def test_max_usd_when_given_must_be_positive(usd: Any) -> None:
    with pytest.raises(UsageError):
        Budgets(max_usd=usd)
    assert Budgets(max_usd=0.5).max_usd == 0.5


def test_budgets_are_frozen() -> None:
    b = Budgets()
    with pytest.raises(AttributeError):
        b.max_nodes = 1  # type: ignore[misc]


def test_budget_errors_are_shad_errors_with_exit_code_2() -> None:
    with pytest.raises(ShadError) as err:
        Budgets(max_nodes=0)
    assert err.value.exit_code == 2


# --- round trip and with_budgets ---------------------------------------------------------------------------


def _full_config(vault: Path, other: Path) -> RunConfig:
    return RunConfig(
        "Compare pour-over and French press",
        (str(vault), str(other)),
        strategy="research",
        budgets=Budgets(
            max_depth=4, max_nodes=20, max_branching=3, max_wall_time=60.5, max_tokens=5000, max_usd=1.25
        ),
        provider="offline",
        models={"worker": "m1", "leaf": "m2"},
        max_parallel=8,
        max_llm=3,
        concurrency_mode="fixed",
        profile="local",
        history_dir="/tmp/somewhere",
        include_history=True,
        code_mode=False,
        replay_from="20260101-000000-abcd",
    )


def test_to_dict_from_dict_round_trip_keeps_every_field(vault: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    config = _full_config(vault, other)
    data = json.loads(json.dumps(config.to_dict()))  # survives JSON, as in run.manifest.json
    assert data["vaults"] == [str(vault.resolve()), str(other.resolve())]
    assert data["budgets"]["max_tokens"] == 5000
    back = RunConfig.from_dict(data)
    assert back == config
    assert isinstance(back.budgets, Budgets)
    assert isinstance(back.vaults, tuple)


def test_from_dict_ignores_unknown_keys_and_fills_defaults(vault: Path) -> None:
    back = RunConfig.from_dict({"goal": "How?", "vaults": [str(vault)], "from_the_future": 1})
    assert back == RunConfig("How?", (str(vault),))


def test_from_dict_validates_too(vault: Path, tmp_path: Path) -> None:
    data = RunConfig("How?", (str(vault),)).to_dict()
    with pytest.raises(UsageError):
        RunConfig.from_dict({**data, "goal": " "})
    with pytest.raises(UsageError):
        RunConfig.from_dict({**data, "budgets": {**data["budgets"], "max_depth": 99}})
    with pytest.raises(VaultNotFoundError):
        RunConfig.from_dict({**data, "vaults": [str(tmp_path / "gone")]})


def test_with_budgets_changes_only_the_named_budgets(vault: Path) -> None:
    config = RunConfig("How?", (str(vault),), budgets=Budgets(max_nodes=7), provider="offline")
    more = config.with_budgets(max_tokens=200_000, max_depth=5)
    assert more.budgets == Budgets(max_nodes=7, max_tokens=200_000, max_depth=5)
    assert (more.goal, more.vaults, more.provider) == (config.goal, config.vaults, config.provider)
    assert config.budgets == Budgets(max_nodes=7)  # the original is untouched


def test_with_budgets_validates_the_new_budgets(vault: Path) -> None:
    config = RunConfig("How?", (str(vault),))
    with pytest.raises(UsageError):
        config.with_budgets(max_depth=11)
    with pytest.raises(UsageError):
        config.with_budgets(max_tokens=999)


@pytest.mark.parametrize("goal", ["the and of", "What is this?", "How?", "Who is it"])
def test_a_new_goal_of_only_common_words_is_refused_with_what_to_do(goal: str, tmp_path: Path) -> None:
    config = RunConfig(goal, (str(tmp_path),))  # a stored run with such a goal still loads
    assert RunConfig.from_dict(config.to_dict()).goal == goal
    with pytest.raises(UsageError) as info:
        config.check_new_goal()
    assert "no word to look for" in info.value.message and "shad run" in (info.value.hint or "")
    RunConfig("What is X?", (str(tmp_path),)).check_new_goal()  # one word of its own is enough
    RunConfig("Was ist das?", (str(tmp_path),)).check_new_goal()  # another language's words are not ours
