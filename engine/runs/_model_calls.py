"""The run's model calls, and the budgets enforced around them: every call goes through ``ModelCalls.call``,
which checks the token ledger, the envelope of the node and the clock before, and charges the provider's
reported usage (and its price, for ``max_usd``) after.
"""

from __future__ import annotations

import time

from ..errors import ShadError
from ..events import BudgetLimitReached, LlmCall, SynthesisDelta
from ..llm import LLMRequest, LLMResponse, ProviderError, TextSink
from ..store import StoreUnavailableError
from ._context import RunContext
from .budget import Envelope
from .dag import Node

__all__ = ["FREE_PROVIDERS", "MIN_CALL_TOKENS", "BudgetExhausted", "ModelCalls"]

MIN_CALL_TOKENS = 200  # below this, a call cannot do useful work: the budget counts as spent
FREE_PROVIDERS = frozenset({"offline", "replay", "stub"})  # no money changes hands
STREAMED = frozenset({"answer", "synthesize"})  # the purposes whose text is the report's answer


class BudgetExhausted(ShadError):
    """The run's token budget or wall time is used up."""


class ModelCalls:
    """Budgeted model calls for one run."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def tokens_spent(self) -> int:
        """Tokens the run has spent in all its sessions (the nodes' own count when the store is gone)."""
        ctx = self.ctx
        try:
            return ctx.state.spent_before + ctx.ledger.spent(ctx.run_id)
        except StoreUnavailableError:
            return ctx.state.spent_before + sum(n.tokens for n in ctx.run.dag)

    async def call(self, node: Node, request: LLMRequest, *, synthesis: bool = False) -> LLMResponse:
        """Make one model call for ``node`` within the budgets; a synthesis may spend the reserve."""
        ctx, state = self.ctx, self.ctx.state
        if state.stop_reason and not synthesis:
            raise BudgetExhausted(state.stop_reason, hint="resume with a larger budget")
        remaining = ctx.ledger.remaining(ctx.run_id)
        reserve = 0 if synthesis else state.envelopes.get("root", Envelope(0, 0)).reserve
        if remaining - reserve < MIN_CALL_TOKENS:
            raise BudgetExhausted(
                f"token budget exhausted ({ctx.ledger.spent(ctx.run_id)} tokens spent)",
                hint="raise --max-tokens",
            )
        self.check_clock(raise_=not synthesis)
        # The node's envelope caps what it may ask for, so one child cannot starve its siblings.
        envelope = state.envelopes.get(node.id)
        own = envelope.total - node.tokens if envelope is not None and not synthesis else request.max_tokens
        request.max_tokens = max(MIN_CALL_TOKENS, min(request.max_tokens, remaining - reserve, own))
        request.model = request.model or ctx.config.models.get(request.tier.value)
        if node.depth == 0 and request.purpose in STREAMED and ctx.on_event is not None:
            request.on_text = self._streamer(node.id)  # the report's answer streams to a watching notebook
        async with ctx.llm.slot():
            try:
                response = await ctx.provider.complete(request)
            except ProviderError as exc:
                if exc.kind == "rate_limit":
                    await ctx.llm.rate_limited()
                ctx.ledger.charge(ctx.run_id, int(getattr(exc, "tokens", 0) or 0))
                node.llm_calls += 1 + exc.retries
                ctx.run.llm_calls += 1 + exc.retries
                raise
        if response.retries:  # the provider had to retry (429, overload): fewer calls in flight for a while
            await ctx.llm.rate_limited()
        else:
            await ctx.llm.succeeded()
        ctx.ledger.charge(ctx.run_id, response.total_tokens)
        cost = self._charge_usd(response)
        node.tokens += response.total_tokens
        node.llm_calls += 1 + response.retries
        ctx.run.llm_calls += 1 + response.retries
        ctx.emit(
            LlmCall(
                node=node.id,
                purpose=request.purpose,
                provider=response.provider,
                model=response.model,
                tokens=response.total_tokens,
                retries=response.retries,
                latency_ms=round(response.latency_ms, 1),
                cost_usd=None if cost is None else round(cost, 6),
            )
        )
        return response

    def _streamer(self, node_id: str) -> TextSink:
        emit = self.ctx.emit

        def on_text(text: str, first: bool) -> None:
            emit(SynthesisDelta(node=node_id, text=text, first=first))

        return on_text

    def _charge_usd(self, response: LLMResponse) -> float | None:
        """Add the call's cost and return it (None: no price known); with ``max_usd`` set, stop further
        work once it is reached."""
        if response.provider in FREE_PROVIDERS:
            return 0.0
        config, state = self.ctx.config, self.ctx.state
        price = config.prices.get(response.model)
        if price is None:
            state.cost_known = False
            if config.budgets.max_usd is not None and not state.stop_reason:
                self.stop(
                    f"max_usd is set but no price is known for model {response.model!r} "
                    f"(pass --price {response.model}=INPUT:OUTPUT, USD per million tokens)"
                )
            return None
        tokens_in = response.input_tokens + response.retry_input_tokens
        tokens_out = response.output_tokens + response.retry_output_tokens
        cost = (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
        state.cost_usd += cost
        limit = config.budgets.max_usd
        if limit is not None and state.cost_usd >= limit and not state.stop_reason:
            self.stop(f"cost limit reached (${state.cost_usd:.4f} of ${limit:g})")
        return cost

    def check_clock(self, raise_: bool = False) -> None:
        """Stop new work once the wall time is used up; with ``raise_``, refuse the work at hand too."""
        state, limit = self.ctx.state, self.ctx.config.budgets.max_wall_time
        if time.monotonic() - self.ctx.started > limit and not state.stop_reason:
            self.stop(f"wall time limit reached ({limit:g} s)")
        if raise_ and state.stop_reason:
            raise BudgetExhausted(state.stop_reason, hint="raise --max-time")

    def stop(self, reason: str) -> None:
        self.ctx.state.stop_reason = reason
        self.ctx.emit(BudgetLimitReached(reason=reason))
