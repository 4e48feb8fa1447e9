"""Request bodies: the options of ``shad run`` / ``shad resume`` by their CLI names with underscores,
turned into the engine's ``RunConfig`` (and ``aresume``'s options) exactly as the CLI turns them.

Options that write outside the vaults the server was started with (``history_dir``, ``write_files`` /
``output``), read outside them (``fs_read``) or reach other services (``redis``, ``net_allow``) are not
offered: the server decides those. ``offline`` only narrows what a run may do, so it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..config import Budgets, RunConfig
from ..errors import UsageError

__all__ = ["DecideRequest", "ResumeRequest", "RunRequest", "run_config"]

Policy = Literal["pause", "approve", "skip", "off"]  # "ask" needs a terminal or a widget
Text = Field(default=None, max_length=2000)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunRequest(_Body):
    """``POST /v1/run``: a goal over some of the server's vaults (all of them when none is named)."""

    goal: str = Field(min_length=1, max_length=20_000)
    vaults: list[str] = Field(default_factory=list, max_length=16)
    strategy: str | None = Field(default=None, max_length=64)
    max_depth: int = Budgets.max_depth
    max_nodes: int = Budgets.max_nodes
    max_time: float = Budgets.max_wall_time
    max_tokens: int = Budgets.max_tokens
    max_usd: float | None = None
    price: list[str] = Field(default_factory=list, max_length=32)
    max_parallel: int = 4
    max_llm: int = 2
    concurrency_mode: Literal["adaptive", "fixed"] = "adaptive"
    provider: Literal["anthropic", "openai", "claude-code", "offline"] | None = None
    model: list[str] = Field(default_factory=list, max_length=8)
    include_history: bool = False
    no_code_mode: bool = False
    garden: bool = False
    learn: bool = False
    profile: Literal["strict", "local", "extended"] = "strict"
    offline: bool = False
    voice: str | None = Field(default=None, max_length=64)
    no_cache: bool = False
    refresh_cache: bool = False
    checkpoints: Policy | None = None
    no_checkpoints: bool = False
    verify: Literal["off", "basic", "build", "strict"] = "basic"
    block_on: list[str] = Field(default_factory=list, max_length=32)
    warn_only: list[str] = Field(default_factory=list, max_length=32)
    tests: Literal["off", "stubs", "post", "tdd", "co"] | None = None


class ResumeRequest(_Body):
    """``POST /v1/run/{id}/resume``: the options of ``shad resume``."""

    budget: str | None = Field(default=None, max_length=32, description="+N tokens, or +P% of the budget")
    max_tokens: int | None = Field(default=None, ge=1000, le=10**9)
    max_depth: int | None = Field(default=None, ge=1, le=10)
    replay: str | None = Field(default=None, max_length=200, description="NODE, subtree:NODE or stale")
    checkpoints: Policy | None = None
    hint: str | None = Field(
        default=None,
        max_length=2000,
        description="for nodes whose retries ran out (FAILED_WITH_DIAGNOSTIC): one more retrieval round "
        "with this hint (`shad resume --hint`)",
    )


class DecideRequest(_Body):
    """``POST /v1/hitl/{id}/decide``: what a person decided. ``notes`` are the notes an edit names
    (a list, or comma-separated), ``text`` the hint (or the approval's note)."""

    action: Literal["approve", "edit", "hint", "skip", "stop", "reject"]
    notes: list[str] | str | None = None
    text: str | None = Text
    resume: bool = Field(default=True, description="resume the run after a checkpoint decision")

    def decision_text(self) -> str:
        if self.action == "edit":
            notes = self.notes if isinstance(self.notes, list) else [self.notes or self.text or ""]
            return ", ".join(n.strip() for n in notes if n and n.strip())
        return (self.text or (self.notes if isinstance(self.notes, str) else "") or "").strip()


def _pairs(items: list[str], option: str, example: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"{option} takes {example}, got {item!r}")
        pairs.append((key.strip(), value.strip()))
    return pairs


def run_config(body: RunRequest, vaults: tuple[Path, ...]) -> RunConfig:
    """The ``RunConfig`` of a request over ``vaults`` (already checked against the server's)."""
    from ..verify import check_names

    prices: dict[str, tuple[float, float]] = {}
    for model, rates in _pairs(body.price, "price", "MODEL=IN:OUT"):
        try:
            rate_in, rate_out = (float(x) for x in rates.split(":"))
        except ValueError as exc:
            raise UsageError(f"price takes MODEL=IN:OUT (USD per million tokens), got {rates!r}") from exc
        prices[model] = (rate_in, rate_out)
    models = {tier.lower(): model for tier, model in _pairs(body.model, "model", "TIER=MODEL_ID")}
    blocking = check_names("block_on", list(body.block_on))
    warning = check_names("warn_only", list(body.warn_only))
    both = [name for name in blocking if name in warning]
    if both:
        raise UsageError(f"{', '.join(both)} cannot be both block_on and warn_only")
    if body.strategy is not None:
        from .. import strategies

        strategies.get(body.strategy)  # an unknown name is a usage error
    return RunConfig(
        body.goal,
        tuple(str(v) for v in vaults),
        strategy=body.strategy,
        provider=body.provider,
        models=models,
        max_parallel=body.max_parallel,
        max_llm=body.max_llm,
        concurrency_mode=body.concurrency_mode,
        include_history=body.include_history,
        code_mode=not body.no_code_mode,
        garden=body.garden,
        learn=body.learn,
        profile=body.profile,
        offline=body.offline,
        voice=body.voice,
        budgets=Budgets(
            max_depth=body.max_depth,
            max_nodes=body.max_nodes,
            max_wall_time=body.max_time,
            max_tokens=body.max_tokens,
            max_usd=body.max_usd,
        ),
        prices=prices,
        use_cache=not body.no_cache,
        refresh_cache=body.refresh_cache,
        checkpoints="off" if body.no_checkpoints else (body.checkpoints or "pause"),
        verify=body.verify,
        block_on=blocking,
        warn_only=warning,
        tests=body.tests,
    )


def resume_options(body: ResumeRequest, base_max_tokens: int) -> dict[str, Any]:
    """``aresume``'s keyword arguments."""
    from ..runs.budget import extra_tokens

    if body.budget and body.max_tokens is not None:
        raise UsageError("give budget or max_tokens, not both")
    return {
        "add_tokens": extra_tokens(body.budget, base_max_tokens),
        "max_tokens": body.max_tokens,
        "max_depth": body.max_depth,
        "replay": body.replay,
        "checkpoints": body.checkpoints,
        "hint": (body.hint or "").strip(),
    }
