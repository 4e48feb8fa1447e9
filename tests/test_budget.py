"""Token budgets: the in-process ledger (atomic under threads) and the hierarchical envelopes."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from engine.runs.budget import (
    BASE_GRANT,
    CHILD_CAP,
    Envelope,
    InProcessLedger,
    Ledger,
    child_envelopes,
    synthesis_reserve,
)

# --- the ledger --------------------------------------------------------------------------------------------


def test_in_process_ledger_satisfies_the_ledger_protocol() -> None:
    assert isinstance(InProcessLedger(), Ledger)


def test_open_charge_remaining_and_spent() -> None:
    ledger = InProcessLedger()
    ledger.open("r1", 10_000)
    assert ledger.remaining("r1") == 10_000
    assert ledger.spent("r1") == 0
    assert ledger.charge("r1", 1_234) == 8_766
    assert ledger.charge("r1", 766) == 8_000
    assert ledger.remaining("r1") == 8_000
    assert ledger.spent("r1") == 2_000


def test_charges_may_overdraw_because_usage_is_a_fact() -> None:
    ledger = InProcessLedger()
    ledger.open("r", 1_000)
    assert ledger.charge("r", 1_500) == -500
    assert ledger.remaining("r") == -500
    assert ledger.spent("r") == 1_500


def test_negative_charges_do_not_refund() -> None:
    ledger = InProcessLedger()
    ledger.open("r", 1_000)
    ledger.charge("r", 300)
    assert ledger.charge("r", -200) == 700
    assert ledger.spent("r") == 300


def test_add_raises_the_budget_without_forgetting_what_was_spent() -> None:
    ledger = InProcessLedger()
    ledger.open("r", 1_000)
    ledger.charge("r", 900)
    assert ledger.add("r", 5_000) == 5_100
    assert ledger.remaining("r") == 5_100
    assert ledger.spent("r") == 900


def test_runs_are_kept_apart() -> None:
    ledger = InProcessLedger()
    ledger.open("a", 1_000)
    ledger.open("b", 2_000)
    ledger.charge("a", 600)
    assert ledger.remaining("a") == 400
    assert ledger.remaining("b") == 2_000
    assert ledger.spent("b") == 0


def test_reopening_a_run_resets_the_total_but_keeps_the_spend() -> None:
    ledger = InProcessLedger()
    ledger.open("r", 1_000)
    ledger.charge("r", 400)
    ledger.open("r", 3_000)
    assert ledger.spent("r") == 400
    assert ledger.remaining("r") == 2_600


def test_an_unknown_run_has_nothing_left() -> None:
    ledger = InProcessLedger()
    assert ledger.remaining("nope") == 0
    assert ledger.spent("nope") == 0


@pytest.fixture
def _switch_often() -> Iterator[None]:
    """Make the interpreter switch threads every microsecond, so a read-modify-write without the
    lock really does interleave (with the default 5 ms interval a race hardly ever shows)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures("_switch_often")
def test_charges_are_atomic_under_many_threads() -> None:
    ledger = InProcessLedger()
    ledger.open("r", 10_000_000)
    threads, per_thread, tokens = 8, 1_000, 7
    start = threading.Barrier(threads)
    seen: list[int] = []
    seen_lock = threading.Lock()

    def work() -> None:
        start.wait()
        mine = [ledger.charge("r", tokens) for _ in range(per_thread)]
        with seen_lock:
            seen.extend(mine)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    total = threads * per_thread * tokens
    assert ledger.spent("r") == total
    assert ledger.remaining("r") == 10_000_000 - total
    # every charge saw a distinct balance: no two threads read-modify-wrote the same value
    assert len(set(seen)) == threads * per_thread
    assert min(seen) == 10_000_000 - total


@pytest.mark.usefixtures("_switch_often")
def test_add_and_charge_interleaved_across_threads_end_exactly_right() -> None:
    ledger = InProcessLedger()
    ledger.open("r", 0)

    def charge() -> None:
        for _ in range(1_000):
            ledger.charge("r", 3)

    def add() -> None:
        for _ in range(1_000):
            ledger.add("r", 5)

    pool = [threading.Thread(target=f) for f in (charge, add) * 4]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert ledger.spent("r") == 4 * 3_000
    assert ledger.remaining("r") == 4 * 5_000 - 4 * 3_000


# --- envelopes ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("envelope", "reserve"),
    [
        (100_000, 25_000),  # 25% beats 800
        (10_000, 2_500),
        (3_200, 800),  # 25% == 800
        (3_000, 800),  # 25% = 750 < 800
        (1_000, 800),
        (800, 800),
        (500, 500),  # capped by the envelope itself
        (0, 0),
    ],
)
def test_synthesis_reserve_is_max_of_800_and_a_quarter_capped_by_the_envelope(
    envelope: int, reserve: int
) -> None:
    assert synthesis_reserve(envelope) == reserve


def test_parent_envelope_keeps_the_reserve_back_and_a_leaf_keeps_nothing() -> None:
    parent = Envelope.for_parent(10_000)
    assert (parent.total, parent.reserve, parent.spendable) == (10_000, 2_500, 7_500)
    small = Envelope.for_parent(600)
    assert small.spendable == 0
    leaf = Envelope.for_leaf(10_000)
    assert (leaf.reserve, leaf.spendable) == (0, 10_000)


def test_spendable_never_goes_negative() -> None:
    assert Envelope(100, 800).spendable == 0


def test_a_single_child_gets_the_whole_pool() -> None:
    parent = Envelope.for_parent(10_000)
    assert child_envelopes(parent, 1) == [7_500]
    assert child_envelopes(Envelope.for_leaf(50_000), 1) == [50_000]


def test_no_children_no_envelopes() -> None:
    assert child_envelopes(Envelope.for_parent(10_000), 0) == []
    assert child_envelopes(Envelope.for_parent(10_000), -1) == []


def test_two_children_are_capped_at_35_percent_of_the_pool() -> None:
    parent = Envelope.for_parent(10_000)  # pool 7 500
    assert CHILD_CAP == 0.35
    assert child_envelopes(parent, 2) == [2_625, 2_625]  # not 3 750 each


def test_many_children_share_the_pool_evenly_within_the_cap() -> None:
    parent = Envelope.for_parent(100_000)  # pool 75 000
    shares = child_envelopes(parent, 5)
    assert shares == [15_000] * 5
    assert sum(shares) <= parent.spendable
    assert all(s <= CHILD_CAP * parent.spendable for s in shares)


def test_every_child_gets_at_least_the_300_token_base_grant() -> None:
    assert BASE_GRANT == 300
    parent = Envelope.for_parent(4_000)  # pool 3 000
    assert child_envelopes(parent, 20) == [300] * 20  # 150 each would be too little to do anything


def test_with_a_tiny_pool_the_base_grant_beats_the_35_percent_cap() -> None:
    parent = Envelope.for_parent(1_600)  # pool 800, 35% = 280 < base grant
    assert child_envelopes(parent, 3) == [300, 300, 300]


@pytest.mark.parametrize("total", [1_000, 5_000, 20_000, 100_000, 1_000_000])
@pytest.mark.parametrize("n", [2, 3, 4, 6, 10])
def test_no_child_exceeds_the_cap_or_falls_below_the_grant(total: int, n: int) -> None:
    parent = Envelope.for_parent(total)
    shares = child_envelopes(parent, n)
    assert len(shares) == n
    cap = max(BASE_GRANT, int(CHILD_CAP * parent.spendable))
    assert all(BASE_GRANT <= s <= cap for s in shares)


def test_extra_tokens_reads_plus_n_and_plus_percent() -> None:
    from engine.errors import UsageError
    from engine.runs.budget import extra_tokens

    assert extra_tokens(None, 20_000) == 0
    assert extra_tokens("+25%", 20_000) == 5_000
    assert extra_tokens("+3000", 20_000) == 3_000
    for bad in ("lots", "+-5"):
        with pytest.raises(UsageError):
            extra_tokens(bad, 20_000)


# --- reservations ------------------------------------------------------------------------------------------


def test_the_prompt_estimate_counts_high_for_english_and_for_other_scripts() -> None:
    from engine.runs.budget import FRAMING, estimate_prompt

    english = "First crack happens near 196 °C, when the beans pop audibly. " * 20
    assert estimate_prompt(english) >= len(english) / 3.5  # real tokenizers: about 4 characters a token
    japanese = "焙煎した豆は数日休ませてから淹れる。" * 20
    assert estimate_prompt(japanese) >= len(japanese)  # about one token a character, or less
    assert estimate_prompt("", "") == FRAMING  # the framing a provider counts around any prompt
    assert estimate_prompt("abc", "abcd") == FRAMING + 1 + 2  # system and prompt, each rounded up


def test_a_call_costs_its_prompt_and_max_tokens_and_a_json_call_also_its_repair() -> None:
    from engine.runs.budget import REPAIR_EXTRA, CallCost

    plain = CallCost.of(500)
    assert plain.at(900) == 1_400
    assert plain.largest_within(1_400) == 900 and plain.largest_within(400) < 0
    json_call = CallCost.of(500, expect_json=True)  # the prompt twice, the answer thrice, the repair's words
    assert json_call.at(1_000) == 2 * 500 + REPAIR_EXTRA + 3 * 1_000
    assert (
        json_call.at(json_call.largest_within(5_000))
        <= 5_000
        < json_call.at(json_call.largest_within(5_000) + 1)
    )


def test_in_flight_holds_and_releases_and_wakes_every_waiter() -> None:
    import asyncio

    from engine.runs.budget import InFlight

    async def main() -> list[str]:
        flight, woke = InFlight(), []
        flight.hold(700)
        flight.hold(300)
        assert (flight.held, flight.calls) == (1_000, 2)

        async def waiter(name: str) -> None:
            await flight.wait()
            woke.append(name)

        waiters = [asyncio.create_task(waiter(n)) for n in ("a", "b")]
        await asyncio.sleep(0)
        assert woke == []  # nothing released yet
        flight.release(700)
        await asyncio.gather(*waiters)
        assert (flight.held, flight.calls) == (300, 1)
        return woke

    assert sorted(asyncio.run(main())) == ["a", "b"]


def test_overspend_is_none_within_the_budget_and_says_how_much_past_it() -> None:
    from engine.runs.budget import overspend, overspend_lines

    assert overspend(100_000, 100_000, []) is None and overspend_lines(None) == []
    call = {"node": "root", "purpose": "answer", "reserved": 1_100, "charged": 6_473}
    over = overspend(105_373, 100_000, [call])
    assert over == {"max_tokens": 100_000, "spent": 105_373, "over_by": 5_373, "calls": [call]}
    text = "\n".join(overspend_lines(over))
    assert text.startswith("> [!warning] Over budget")
    assert "spent 105373 tokens of its 100000-token budget (5373 over)" in text
    assert "1 model call reported more tokens than were reserved for it" in text
    assert "earlier session" in "\n".join(overspend_lines(overspend(2_000, 1_000, [])))
