"""The scheduler's slot book, through the scheduler: a namespace's next question goes to the
slot holding its prefix, or waits for it when that is cheaper than reading the prefix again;
no more runs at once than the measured decode rates pay for; waiting for a prefix never
lets another caller go ahead twice; the decision reaches the metrics."""

from __future__ import annotations

import asyncio

from datawell.observability import metrics
from datawell.scheduler import Limits, ModelScheduler, Priority
from datawell.slots import Rates, SlotBook

# Reading a prefix of 1,000 tokens at 50 tokens/s takes 20 s; two sequences decode faster than one.
RATES = Rates(prefill=50.0, decode={1: 12.0, 2: 15.0}, prefix_tokens=1000)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(rates: Rates | None = RATES, slots: int = 2) -> tuple[ModelScheduler, Clock]:
    clock = Clock()
    book = SlotBook(slots, rates)
    return ModelScheduler(Limits(slots=slots, queue=16, per_caller=2), clock=clock, book=book), clock


def test_a_namespaces_next_question_goes_to_the_slot_holding_its_prefix() -> None:
    scheduler, clock = make()
    alice = scheduler.enter("alice", prefix="shop")
    bob = scheduler.enter("bob", prefix="zoo")
    assert alice.placement is not None and bob.placement is not None
    assert (alice.placement.slot, alice.placement.decision) == (0, "miss")
    assert (bob.placement.slot, bob.placement.decision) == (1, "miss")
    clock.now = 25
    alice.release()
    carol = scheduler.enter("carol", prefix="shop")
    assert carol.placement is not None
    assert (carol.placement.slot, carol.placement.decision) == (0, "hit")
    assert scheduler.view().running == 2


def test_a_question_waits_for_its_prefixs_slot_when_that_is_cheaper() -> None:
    scheduler, clock = make()
    alice = scheduler.enter("alice", prefix="shop")  # slot 0, reads the prefix
    bob = scheduler.enter("bob", prefix="zoo")  # slot 1
    clock.now = 25
    alice.release()
    carol = scheduler.enter("carol", prefix="shop")  # slot 0 again: a hit
    clock.now = 26
    bob.release()
    clock.now = 27
    # Slot 1 is free, but carol's run on slot 0 should end in about 6 s, and reading the
    # prefix on slot 1 would take 20 s, and 20 s more of carol's: dave waits.
    dave = scheduler.enter("dave", prefix="shop")
    assert not dave.granted and dave.position() == 1
    assert scheduler.view().running == 1
    clock.now = 30
    carol.release()
    assert dave.placement is not None
    assert (dave.placement.slot, dave.placement.decision) == (0, "hit")
    assert dave.placement.waited_for_prefix
    assert "waited for slot 0" in dave.placement.reason and "40.0 s" in dave.placement.reason


def test_a_long_wait_reads_the_prefix_elsewhere() -> None:
    scheduler, clock = make()
    scheduler.book.warm_run_seconds = 60  # runs here take a minute: waiting costs more than reading
    alice = scheduler.enter("alice", prefix="shop")
    clock.now = 21
    bob = scheduler.enter("bob", prefix="shop")
    assert alice.granted and bob.placement is not None
    assert (bob.placement.slot, bob.placement.decision) == (1, "miss")
    assert "frees in about" in bob.placement.reason


def test_askers_of_one_namespace_at_once_wait_for_its_slot_rather_than_read_it_beside_it() -> None:
    """Issue 52's bench, four askers of one namespace at once: the fourth, three runs ahead of
    it (about 24 s), read the prefix again on a free slot (20 s alone), and the three runs
    decoding beside it waited that reading out too. A reading counts once for every run it
    holds up, so all four keep to the slot holding the prefix."""
    scheduler, clock = make(slots=4)
    first = scheduler.enter("u0", prefix="shop")
    clock.now = 30
    first.release()
    asked = [scheduler.enter(f"u{n}", prefix="shop") for n in range(1, 5)]
    assert asked[0].placement is not None and asked[0].placement.decision == "hit"
    assert [t.granted for t in asked] == [True, False, False, False]
    assert [t.position() for t in asked[1:]] == [1, 2, 3]


def test_a_prefix_saved_by_the_model_is_restored_on_any_slot() -> None:
    """llama.cpp saves an idle sequence's prompt when a task starts on another: the prefix of
    slot 0, idle when bob's run started, can be copied back on slot 1 without reading it."""
    scheduler, clock = make()
    alice = scheduler.enter("alice", prefix="shop")
    clock.now = 25
    alice.release()
    bob = scheduler.enter("bob", prefix="zoo")  # starts on slot 1 while slot 0 is idle
    carol = scheduler.enter("carol", prefix="shop")  # slot 0: a hit
    assert bob.placement is not None and carol.placement is not None
    assert (bob.placement.slot, carol.placement.slot, carol.placement.decision) == (1, 0, "hit")
    clock.now = 26
    bob.release()
    dave = scheduler.enter("dave", prefix="shop")
    assert dave.placement is not None
    assert (dave.placement.slot, dave.placement.decision) == (1, "restored")


def test_no_second_run_at_once_when_the_decode_rate_does_not_pay_for_it() -> None:
    # Measured: two sequences together decode slower than one alone.
    slower = Rates(prefill=50.0, decode={1: 12.0, 2: 11.0}, prefix_tokens=1000)
    assert slower.parallel(2) == 1 and RATES.parallel(2) == 2
    scheduler, clock = make(slower)
    alice = scheduler.enter("alice", prefix="shop")
    bob = scheduler.enter("bob", prefix="zoo")
    assert alice.granted and not bob.granted and bob.position() == 1
    clock.now = 10
    alice.release()
    assert bob.placement is not None and bob.placement.slot == 1  # the empty slot: slot 0 keeps shop
    # With rates where two sequences pay, the same two run at once.
    faster, _ = make(RATES)
    assert faster.enter("alice", prefix="shop").granted and faster.enter("bob", prefix="zoo").granted
    assert faster.view().running == 2


def test_the_decode_rates_between_and_past_the_measured_counts() -> None:
    measured = Rates(prefill=53.0, decode={1: 12.0, 2: 15.11, 4: 18.05}, prefix_tokens=1100)
    assert measured.decode_rate(3) == (15.11 + 18.05) / 2
    assert measured.parallel(4) == 4
    assert measured.parallel(8) == 4  # no gain measured past four sequences


def test_waiting_for_a_prefix_never_lets_a_caller_go_ahead_twice() -> None:
    scheduler, clock = make()
    alice = scheduler.enter("alice", prefix="shop")  # slot 0, reading the prefix (about 28 s)
    clock.now = 1
    carol = scheduler.enter("carol", prefix="shop")
    assert not carol.granted  # waits for slot 0 rather than read the prefix beside alice's reading
    clock.now = 2
    bob = scheduler.enter("bob", prefix="zoo")
    assert bob.granted and carol.passed_by == {"bob": 1}
    clock.now = 3
    bob_again = scheduler.enter("bob", prefix="zoo")
    clock.now = 5
    bob.release()
    # bob's second question would pass carol a second time: carol goes first, reading the prefix.
    assert carol.placement is not None and not bob_again.granted
    assert (carol.placement.slot, carol.placement.decision) == (1, "miss")
    assert carol.placement.waited_for_prefix
    assert max(carol.passed_by.values()) == 1
    alice.release()
    assert bob_again.granted


async def test_a_flood_of_one_namespace_still_takes_turns() -> None:
    """As `test_no_caller_waits_behind_more_than_one_run_of_another` in test_scheduler.py, every
    question of one namespace, with the cost model: still nobody passed twice, all answered."""
    scheduler = ModelScheduler(Limits(slots=2, queue=32, per_caller=2), book=SlotBook(2, RATES))
    order: list[str] = []

    async def ask(caller: str) -> None:
        async with scheduler.slot(caller, Priority.QUESTION, prefix="shop"):
            order.append(caller)
            await asyncio.sleep(0.01)

    async def one_at_a_time(caller: str) -> None:
        for _ in range(3):
            await ask(caller)

    flood = [asyncio.create_task(ask("alice")) for _ in range(6)]
    await asyncio.sleep(0)
    await asyncio.wait_for(asyncio.gather(one_at_a_time("bob"), one_at_a_time("carol"), *flood), 10)
    waits = [w for w in scheduler.view().recent_waits if w.caller in ("bob", "carol")]
    assert len(waits) == 6 and max(w.passed_by for w in waits) <= 1
    assert len(order) == 12


def test_the_decision_reaches_the_metrics() -> None:
    clock = Clock()
    scheduler = ModelScheduler(
        Limits(slots=2, queue=4, per_caller=2),
        clock=clock,
        listener=metrics.QueueMetrics("test-slots"),
        book=SlotBook(2, RATES),
    )

    def sample(name: str, **labels: str) -> float:
        return metrics.REGISTRY.get_sample_value(name, {"model": "test-slots", **labels}) or 0.0

    def runs(slot: int, prefix: str) -> float:
        return sample("datawell_model_slot_runs_total", slot=str(slot), prefix=prefix)

    misses, hits, waits = runs(0, "miss"), runs(0, "hit"), sample("datawell_model_prefix_waits_total")
    alice = scheduler.enter("alice", prefix="shop")
    bob = scheduler.enter("bob", prefix="shop")  # waits for slot 0
    assert (runs(0, "miss"), runs(0, "hit")) == (misses + 1, hits)
    clock.now = 10
    alice.release()
    assert bob.granted and runs(0, "hit") == hits + 1
    assert sample("datawell_model_prefix_waits_total") == waits + 1


def test_one_prefix_many_slots_when_the_model_shares_prompts() -> None:
    """With `shares` the runtime has llama.cpp save each call's prompt to its host-RAM cache:
    the askers of one namespace who waited while its prefix was read then start together,
    one where the prefix is and the others restoring it; without, they take turns on its slot."""
    four = Rates(prefill=50.0, decode={1: 12.0, 2: 15.11, 4: 18.05}, prefix_tokens=1000)
    for shares, started in ((True, {"hit", "restored"}), (False, {"hit"})):
        clock = Clock()
        scheduler = ModelScheduler(Limits(slots=4, queue=8, per_caller=2), clock=clock, book=SlotBook(4, four, shares))
        alice = scheduler.enter("alice", prefix="shop")
        bob, carol = scheduler.enter("bob", prefix="shop"), scheduler.enter("carol", prefix="shop")
        assert alice.granted and not bob.granted and not carol.granted  # nobody reads the prefix twice
        clock.now = 28
        alice.release()
        granted = {t.placement.decision for t in (bob, carol) if t.placement is not None}
        assert granted == started, shares
        assert bob.placement is not None and bob.placement.slot == 0


def test_a_prefixs_length_is_learned_from_its_runs() -> None:
    scheduler, _ = make()
    assert scheduler.book.prefill_seconds("shop") == 20.0  # the default 1,000 tokens at 50 a second
    scheduler.prefix_seen("shop", 1500)
    scheduler.prefix_seen("shop", 6)  # a call that kept only another prompt's first tokens
    assert scheduler.book.prefill_seconds("shop") == 30.0


def test_a_namespaces_queue_does_not_hold_up_another_namespace() -> None:
    """Questions waiting for their prefix's slot leave the free slot to a question of another
    namespace, which starts at once instead of queueing behind them."""
    scheduler, clock = make()
    alice = scheduler.enter("alice", prefix="shop")
    bob, carol = scheduler.enter("bob", prefix="shop"), scheduler.enter("carol", prefix="shop")
    clock.now = 2
    dave = scheduler.enter("dave", prefix="zoo")
    assert alice.granted and dave.granted and not bob.granted and not carol.granted
    assert dave.placement is not None and dave.placement.slot == 1
    assert [bob.position(), carol.position()] == [1, 2]
