"""The run's model calls, and the budgets enforced around them: every call goes through ``_call``, which
checks the token ledger, the envelope of the node and the clock before, and charges the provider's
reported usage (and its price, for ``max_usd``) after.

A mixin of ``Orchestrator``: it works on the orchestrator's run, ledger, limiter and provider record.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..config import RunConfig
from ..errors import ShadError
from ..llm import LLMRequest, LLMResponse, ProviderError, Recorder
from ..store import StoreUnavailableError
from ._run import Run
from .budget import Envelope, Ledger
from .dag import Node
from .scheduler import AdaptiveLimiter

__all__ = ["FREE_PROVIDERS", "MIN_CALL_TOKENS", "BudgetExhausted", "ModelCalls"]

MIN_CALL_TOKENS = 200  # below this, a call cannot do useful work: the budget counts as spent
FREE_PROVIDERS = frozenset({"offline", "replay", "stub"})  # no money changes hands


class BudgetExhausted(ShadError):
    """The run's token budget or wall time is used up."""


class ModelCalls:
    config: RunConfig
    run: Run
    run_id: str
    ledger: Ledger
    llm: AdaptiveLimiter
    provider: Recorder
    envelopes: dict[str, Envelope]
    stop_reason: str | None
    started: float
    spent_before: int
    cost_usd: float
    cost_known: bool
    event: Callable[..., None]

    def tokens_spent(self) -> int:
        """Tokens the run has spent in all its sessions (the nodes' own count when the store is gone)."""
        try:
            return self.spent_before + self.ledger.spent(self.run_id)
        except StoreUnavailableError:
            return self.spent_before + sum(n.tokens for n in self.run.dag)

    async def _call(self, node: Node, request: LLMRequest, *, synthesis: bool = False) -> LLMResponse:
        if self.stop_reason and not synthesis:
            raise BudgetExhausted(self.stop_reason, hint="resume with a larger budget")
        remaining = self.ledger.remaining(self.run_id)
        reserve = 0 if synthesis else self.envelopes.get("root", Envelope(0, 0)).reserve
        if remaining - reserve < MIN_CALL_TOKENS:
            raise BudgetExhausted(
                f"token budget exhausted ({self.ledger.spent(self.run_id)} tokens spent)",
                hint="raise --max-tokens",
            )
        self._check_clock(raise_=not synthesis)
        # The node's envelope caps what it may ask for, so one child cannot starve its siblings.
        envelope = self.envelopes.get(node.id)
        own = envelope.total - node.tokens if envelope is not None and not synthesis else request.max_tokens
        request.max_tokens = max(MIN_CALL_TOKENS, min(request.max_tokens, remaining - reserve, own))
        request.model = request.model or self.config.models.get(request.tier.value)
        async with self.llm.slot():
            try:
                response = await self.provider.complete(request)
            except ProviderError as exc:
                if exc.kind == "rate_limit":
                    await self.llm.rate_limited()
                self.ledger.charge(self.run_id, int(getattr(exc, "tokens", 0) or 0))
                node.llm_calls += 1 + exc.retries
                self.run.llm_calls += 1 + exc.retries
                raise
        if response.retries:  # the provider had to retry (429, overload): fewer calls in flight for a while
            await self.llm.rate_limited()
        else:
            await self.llm.succeeded()
        self.ledger.charge(self.run_id, response.total_tokens)
        self._charge_usd(response)
        node.tokens += response.total_tokens
        node.llm_calls += 1 + response.retries
        self.run.llm_calls += 1 + response.retries
        self.event(
            "LLM_CALL",
            node=node.id,
            purpose=request.purpose,
            provider=response.provider,
            model=response.model,
            tokens=response.total_tokens,
            retries=response.retries,
            latency_ms=round(response.latency_ms, 1),
        )
        return response

    def _charge_usd(self, response: LLMResponse) -> None:
        """Add the call's cost; with ``max_usd`` set, stop further work once it is reached."""
        if response.provider in FREE_PROVIDERS:
            return
        price = self.config.prices.get(response.model)
        if price is None:
            self.cost_known = False
            if self.config.budgets.max_usd is not None and not self.stop_reason:
                self.stop_reason = (
                    f"max_usd is set but no price is known for model {response.model!r} "
                    f"(pass --price {response.model}=INPUT:OUTPUT, USD per million tokens)"
                )
                self.event("BUDGET_EXHAUSTED", reason=self.stop_reason)
            return
        tokens_in = response.input_tokens + response.retry_input_tokens
        tokens_out = response.output_tokens + response.retry_output_tokens
        self.cost_usd += (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
        limit = self.config.budgets.max_usd
        if limit is not None and self.cost_usd >= limit and not self.stop_reason:
            self.stop_reason = f"cost limit reached (${self.cost_usd:.4f} of ${limit:g})"
            self.event("BUDGET_EXHAUSTED", reason=self.stop_reason)

    def _check_clock(self, raise_: bool = False) -> None:
        if time.monotonic() - self.started > self.config.budgets.max_wall_time and not self.stop_reason:
            self.stop_reason = f"wall time limit reached ({self.config.budgets.max_wall_time:g} s)"
            self.event("BUDGET_EXHAUSTED", reason=self.stop_reason)
        if raise_ and self.stop_reason:
            raise BudgetExhausted(self.stop_reason, hint="raise --max-time")
