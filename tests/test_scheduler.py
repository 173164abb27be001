"""The model scheduler on its own: round robin between callers, questions before background
work, the per-caller limit, the queue's bound, positions, and giving a place back."""

from __future__ import annotations

import asyncio

import pytest

from datawell.errors import Busy
from datawell.scheduler import Limits, ModelScheduler, Priority

RUN_SECONDS = 0.02


async def ask(scheduler: ModelScheduler, caller: str, order: list[str], priority: Priority = Priority.QUESTION) -> None:
    """One run that holds its slot for a while, as a slow model would."""
    async with scheduler.slot(caller, priority):
        order.append(caller)
        await asyncio.sleep(RUN_SECONDS)


async def test_no_caller_waits_behind_more_than_one_run_of_another() -> None:
    """alice floods the queue with 8 questions; bob and carol ask one at a time, 3 each.
    Every wait of bob and carol is passed by at most one run of any other caller."""
    scheduler = ModelScheduler(Limits(slots=2, queue=32, per_caller=2))
    order: list[str] = []

    async def one_at_a_time(caller: str) -> None:
        for _ in range(3):
            await ask(scheduler, caller, order)

    flood = [asyncio.create_task(ask(scheduler, "alice", order)) for _ in range(8)]
    await asyncio.sleep(0)
    await asyncio.gather(one_at_a_time("bob"), one_at_a_time("carol"), *flood)
    waits = [w for w in scheduler.view().recent_waits if w.caller in ("bob", "carol")]
    assert len(waits) == 6
    assert max(w.passed_by for w in waits) <= 1
    # FIFO would have served all of alice's flood before bob's first question.
    assert order.index("bob") < 4


async def test_questions_go_before_background_work() -> None:
    scheduler = ModelScheduler(Limits(slots=1, queue=8, per_caller=1))
    running = scheduler.enter("alice")
    assert running.granted
    background = scheduler.enter("ingest:alice", Priority.BACKGROUND)
    question = scheduler.enter("bob")
    assert background.position() == 2 and question.position() == 1
    running.release()
    assert question.granted and not background.granted
    question.release()
    assert background.granted


async def test_a_callers_limit_lets_others_pass() -> None:
    scheduler = ModelScheduler(Limits(slots=2, queue=8, per_caller=1))
    first = scheduler.enter("alice")
    second = scheduler.enter("alice")
    bob = scheduler.enter("bob")
    assert first.granted and not second.granted and bob.granted
    assert scheduler.view().waiting_by_caller == {"alice": 1}


async def test_a_full_queue_refuses_at_once_with_a_retry_time() -> None:
    scheduler = ModelScheduler(Limits(slots=1, queue=1, per_caller=1))
    scheduler.enter("alice")
    scheduler.enter("bob")
    # `enter` is not a coroutine: it cannot wait, so raising here is refusing at once.
    with pytest.raises(Busy) as refused:
        scheduler.enter("carol")
    assert refused.value.retry_after_seconds >= 1
    assert refused.value.error_code == "BUSY" and refused.value.mapping.http_status == 503
    assert scheduler.view().refused == 1 and scheduler.view().waiting == 1
    # Background work is never refused: it waits however long the queue.
    assert not scheduler.enter("ingest:alice", Priority.BACKGROUND).granted


async def test_positions_count_down_and_a_released_place_is_given_back() -> None:
    scheduler = ModelScheduler(Limits(slots=1, queue=8, per_caller=1))
    running = scheduler.enter("alice")
    bob = scheduler.enter("bob")
    carol = scheduler.enter("carol")
    seen: list[int] = []

    async def follow() -> None:
        async for position in carol.positions():
            seen.append(position)

    following = asyncio.create_task(follow())
    await asyncio.sleep(0)
    bob.release()  # bob gave up waiting
    await asyncio.sleep(0)
    running.release()
    await asyncio.wait_for(following, 1)
    assert seen == [2, 1] and carol.granted
    assert scheduler.view().running == 1 and scheduler.view().waiting == 0


async def test_an_idle_scheduler_grants_at_once_and_yields_no_position() -> None:
    scheduler = ModelScheduler(Limits(slots=2, queue=0, per_caller=2))
    ticket = scheduler.enter("alice")
    assert [p async for p in ticket.positions()] == []
    ticket.release()
    ticket.release()  # idempotent
    assert scheduler.view().running == 0
