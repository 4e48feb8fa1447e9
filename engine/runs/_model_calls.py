"""The run's model calls, and the budgets enforced around them: every call goes through ``ModelCalls.call``,
which checks the clock and the envelope of the node, reserves the call's worst case against the token
ledger (``budget.InFlight``: calls in flight together never promise more than is left), and after the call
charges the provider's reported usage (and its price, for ``max_usd``) and lets the reservation go.
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import ShadError
from ..events import BudgetLimitReached, LlmCall, SynthesisDelta
from ..llm import LLMRequest, LLMResponse, ProviderError, TextSink
from ..store import StoreUnavailableError
from ._context import RunContext
from .budget import CallCost, Envelope, InFlight, estimate_prompt
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
        self.in_flight = InFlight()  # one ModelCalls per run: every call of the run reserves here
        self.charged = 0  # tokens this process charged the run's ledger (only it charges this budget)

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
        keep = 0 if synthesis else state.envelopes.get("root", Envelope(0, 0)).reserve
        shape = CallCost.of(estimate_prompt(request.system, request.prompt), request.expect_json)
        # One ledger read a call: what it says, less what this process charged since (the same numbers
        # as reading again, as only this process spends this run's budget; a read can take a millisecond).
        read = (ctx.ledger.remaining(ctx.run_id) - keep, self.charged)
        self._fit(shape, read[0])  # refused before it waits for a slot
        self.check_clock(raise_=not synthesis)
        # The node's envelope caps what it may ask for, so one child cannot starve its siblings.
        envelope = state.envelopes.get(node.id)
        own = envelope.total - node.tokens if envelope is not None and not synthesis else request.max_tokens
        wanted = max(MIN_CALL_TOKENS, min(request.max_tokens, own))
        request.model = request.model or ctx.config.models.get(request.tier.value)
        if node.depth == 0 and request.purpose in STREAMED and ctx.on_event is not None:
            request.on_text = self._streamer(node.id)  # the report's answer streams to a watching notebook
        async with ctx.llm.slot():
            # Reserved inside the slot: a call never waits for room while holding a reservation.
            held = await self._reserve(request, shape, wanted, read, synthesis)
            try:
                response = await ctx.provider.complete(request)
            except ProviderError as exc:
                if exc.kind == "rate_limit":
                    await ctx.llm.rate_limited()
                self._settle(node, request, held, int(getattr(exc, "tokens", 0) or 0))
                node.llm_calls += 1 + exc.retries
                ctx.run.llm_calls += 1 + exc.retries
                raise
            except BaseException:  # cancelled, or a bug: nothing reported to charge
                self.in_flight.release(held)
                raise
            self._settle(node, request, held, response.total_tokens)
        if response.retries:  # the provider had to retry (429, overload): fewer calls in flight for a while
            await ctx.llm.rate_limited()
        else:
            await ctx.llm.succeeded()
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

    def _fit(self, cost: CallCost, left: int) -> int:
        """The largest ``max_tokens`` the call may have with ``left`` tokens free; refused (the run's
        budget is used up) when not even ``MIN_CALL_TOKENS`` fit: what is left only shrinks."""
        fits = cost.largest_within(left)
        if fits < MIN_CALL_TOKENS:
            spent = self.ctx.ledger.spent(self.ctx.run_id)
            raise BudgetExhausted(
                f"token budget exhausted ({spent} tokens spent; the next call needs about "
                f"{cost.at(MIN_CALL_TOKENS)} of the {max(0, left)} left)",
                hint="raise --max-tokens",
            )
        return fits

    async def _reserve(
        self, request: LLMRequest, cost: CallCost, wanted: int, read: tuple[int, int], synthesis: bool
    ) -> int:
        """Hold the call's worst case against what is left beside the calls in flight, ``max_tokens``
        shrunk to fit what is left at all; while calls in flight hold the room it needs, wait for one to
        settle (its real usage is usually below its reservation). Returns the tokens held."""
        ctx = self.ctx
        while True:
            if ctx.state.stop_reason and not synthesis:
                raise BudgetExhausted(ctx.state.stop_reason, hint="resume with a larger budget")
            left = read[0] - (self.charged - read[1])
            max_tokens = min(wanted, self._fit(cost, left))
            worst = cost.at(max_tokens)
            if self.in_flight.held + worst <= left:
                self.in_flight.hold(worst)
                request.max_tokens = max_tokens
                return worst
            await self.in_flight.wait()

    def _settle(self, node: Node, request: LLMRequest, held: int, tokens: int) -> None:
        """Charge what the provider reported, let the reservation go, and remember a call that went past
        its reservation (the run's summary and report say so if the run ends over its budget)."""
        try:
            self.ctx.ledger.charge(self.ctx.run_id, tokens)
            self.charged += max(0, tokens)
        finally:
            self.in_flight.release(held)
        if tokens > held:
            over: dict[str, Any] = {"node": node.id, "purpose": request.purpose, "reserved": held}
            self.ctx.state.overruns.append(over | {"charged": tokens})

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
