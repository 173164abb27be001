"""The one queue in front of the chat model: every run that calls a model (questions over
REST, A2A, MCP and the console, the curator) and every model call of an ingestion waits here
for one of a fixed number of slots (the embedded runtime's parallel sequences, or a setting
for hosted models).

    ticket = scheduler.enter(caller, Priority.QUESTION)   # raises Busy when the queue is full
    async for position in ticket.positions():           # 1-based, each time it changes
        ...                                             # tell the caller it waits
    try: ... run ... finally: ticket.release()          # also what a client that leaves does

Who gets a freed slot: questions before background work (ingestion); among the waiting
tickets of one priority, callers take turns (round robin: the caller served longest ago goes
first, each caller's tickets in arrival order), and a caller already running
`per_caller` tickets is passed over. So no caller waits behind more than one run of
another caller that came after it. `view()` is the read-only picture metrics export.

Which slot a granted ticket takes, and whether a ticket whose turn it is takes a free slot
now or waits for the one holding its prompt prefix, is the `SlotBook`'s decision
(`datawell.slots`: by cost, from the machine's measured rates); the ticket keeps it as its
`placement` for the run's trace and the metrics."""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import IntEnum
from itertools import count
from typing import Protocol

from datawell.errors import Busy
from datawell.slots import Placement, SlotBook, Waiting

DEFAULT_RUN_SECONDS = 10.0  # the run time Retry-After assumes before any run has finished
MAX_RETRY_AFTER_SECONDS = 600
RECENT = 256  # waits kept for the view


class Priority(IntEnum):
    QUESTION = 0  # someone is waiting for the answer
    BACKGROUND = 1  # ingestion: never refused, served when no question waits


@dataclass(frozen=True)
class Limits:
    slots: int  # tickets holding a slot at once
    queue: int  # questions waiting at most; past it a question is refused with Busy
    per_caller: int  # tickets of one caller holding a slot at once


@dataclass(frozen=True)
class Wait:
    """One finished wait: how long, and the most runs of any one other caller that got a
    slot meanwhile (round robin keeps it at 1 for a caller with one question at a time)."""

    caller: str
    priority: Priority
    seconds: float
    passed_by: int


@dataclass(frozen=True)
class SchedulerView:
    """What the scheduler holds now, and its latest waits (for metrics; read-only)."""

    slots: int
    running: int
    waiting: int  # all priorities
    waiting_questions: int
    waiting_by_caller: dict[str, int]
    running_by_caller: dict[str, int]
    refused: int  # questions refused with Busy since start
    granted: int  # tickets that got a slot since start
    recent_waits: tuple[Wait, ...]  # the latest waits that ended in a slot, oldest first


class Ticket:
    """One run's (or one background call's) place: waiting, then holding a slot, then released."""

    def __init__(
        self, scheduler: ModelScheduler, caller: str, priority: Priority, number: int, prefix: str | None = None
    ) -> None:
        self.scheduler = scheduler
        self.caller = caller
        self.priority = priority
        self.prefix = prefix  # the run's prompt prefix (graphs.prefix.prefix_key), if it has one
        self.placement: Placement | None = None  # its slot and why, once granted
        self.waiting: Waiting | None = None  # while it waits for the slot holding its prefix
        self.number = number  # arrival order
        self.entered_at = scheduler.clock()
        self.granted_at: float | None = None
        self.released = False
        self.entry_position: int | None = None  # where it stood when it entered, if it had to wait
        self.passed_by: dict[str, int] = {}  # other caller -> their tickets granted while this one waited
        self._changed = asyncio.Event()

    @property
    def granted(self) -> bool:
        return self.granted_at is not None

    @property
    def waited_seconds(self) -> float:
        return (self.granted_at or self.scheduler.clock()) - self.entered_at

    def position(self) -> int | None:
        """1-based place among the waiting tickets in the order they would get slots; None
        once granted or released."""
        return self.scheduler.position(self)

    async def positions(self) -> AsyncIterator[int]:
        """The position each time it changes while waiting; ends when the ticket holds a slot.
        Yields nothing for a ticket granted at once; a ticket that had to wait yields at least
        its place at entry, even when its slot came before anyone iterated this."""
        last = self.entry_position
        if last is not None:
            yield last
        while not self.granted:
            if self.released:
                raise asyncio.CancelledError("the ticket was released while it waited")
            self._changed.clear()
            position = self.position()
            if position is not None and position != last:
                last = position
                yield position
            if not self.granted:
                await self._changed.wait()

    async def wait(self) -> None:
        async for _ in self.positions():
            pass

    def release(self) -> None:
        """Give the slot (or the place in the queue) back; idempotent."""
        self.scheduler.release(self)

    def _notify(self) -> None:
        self._changed.set()


class QueueListener(Protocol):
    """Hears the queue change (metrics): how many wait now, and each wait that ended in a slot."""

    def waiting(self, count: int) -> None: ...

    def waited(self, seconds: float) -> None: ...

    def placed(self, placement: Placement) -> None: ...


class ModelScheduler:
    def __init__(
        self,
        limits: Limits,
        clock: Callable[[], float] = time.monotonic,
        listener: QueueListener | None = None,
        book: SlotBook | None = None,
    ) -> None:
        if limits.slots < 1 or limits.per_caller < 1 or limits.queue < 0:
            raise ValueError(f"invalid scheduler limits {limits}")
        self.limits = limits
        self.clock = clock
        self.listener = listener
        self.book = book or SlotBook(limits.slots)
        if self.book.slots != limits.slots:
            raise ValueError(f"the slot book has {self.book.slots} slots, the limits {limits.slots}")
        self._numbers = count()
        self._served = count(1)
        self._waiting: list[Ticket] = []
        self._running: dict[str, int] = {}
        self._active = 0
        self._last_served: dict[str, int] = {}
        self._run_seconds = DEFAULT_RUN_SECONDS  # moving average of a question's hold time
        self._waits: deque[Wait] = deque(maxlen=RECENT)
        self._refused = 0
        self._granted = 0

    def enter(self, caller: str, priority: Priority = Priority.QUESTION, prefix: str | None = None) -> Ticket:
        """A ticket, granted at once when a slot is free for this caller (and the slot book
        finds no cheaper slot to wait for), else waiting. A question that would wait past the
        queue's bound is refused with `Busy` (no await: the refusal takes microseconds)."""
        ticket = Ticket(self, caller, priority, next(self._numbers), prefix)
        self._waiting.append(ticket)
        self._dispatch()
        if not ticket.granted and priority == Priority.QUESTION and self._waiting_questions() > self.limits.queue:
            self._waiting.remove(ticket)
            self._refused += 1
            retry = self.retry_after_seconds()
            raise Busy(
                f"the model is busy: {self.limits.slots} runs are in progress and {self.limits.queue} are waiting; "
                f"retry in {retry} s",
                retry_after_seconds=retry,
            )
        if not ticket.granted:
            ticket.entry_position = self.position(ticket)
        self._notify_waiting()
        return ticket

    @asynccontextmanager
    async def slot(
        self, caller: str, priority: Priority = Priority.QUESTION, prefix: str | None = None
    ) -> AsyncIterator[Ticket]:
        """Hold a slot for the block (waiting for it first); leaving the block, however, frees it."""
        ticket = self.enter(caller, priority, prefix)
        try:
            await ticket.wait()
            yield ticket
        finally:
            ticket.release()

    def release(self, ticket: Ticket) -> None:
        if ticket.released:
            return
        ticket.released = True
        if ticket.granted:
            self._active -= 1
            left = self._running[ticket.caller] - 1
            if left:
                self._running[ticket.caller] = left
            else:
                del self._running[ticket.caller]
            if ticket.granted_at is not None and ticket.placement is not None:
                now = self.clock()
                held = now - ticket.granted_at
                self.book.released(ticket.placement.slot, now, held, ticket.placement.decision)
                if ticket.priority == Priority.QUESTION:
                    self._run_seconds = 0.8 * self._run_seconds + 0.2 * held
        else:
            self._waiting.remove(ticket)
        ticket._notify()
        self._dispatch()
        self._notify_waiting()

    def position(self, ticket: Ticket) -> int | None:
        if ticket.granted or ticket.released:
            return None
        return self._order().index(ticket) + 1

    def retry_after_seconds(self) -> int:
        """When a refused question might find room: the queue ahead of it drained at the
        average run time, over every slot the measured rates let run at once."""
        ahead = self._waiting_questions() + 1
        estimate = math.ceil(self._run_seconds * ahead / min(self.limits.slots, self.book.parallel))
        return max(1, min(MAX_RETRY_AFTER_SECONDS, estimate))

    def view(self) -> SchedulerView:
        waiting_by_caller: dict[str, int] = {}
        for ticket in self._waiting:
            waiting_by_caller[ticket.caller] = waiting_by_caller.get(ticket.caller, 0) + 1
        return SchedulerView(
            slots=self.limits.slots,
            running=self._active,
            waiting=len(self._waiting),
            waiting_questions=self._waiting_questions(),
            waiting_by_caller=waiting_by_caller,
            running_by_caller=dict(self._running),
            refused=self._refused,
            granted=self._granted,
            recent_waits=tuple(self._waits),
        )

    def _waiting_questions(self) -> int:
        return sum(1 for t in self._waiting if t.priority == Priority.QUESTION)

    def _order(self) -> list[Ticket]:
        """The waiting tickets in the order they would get slots if nobody were at their limit:
        by priority, then in rounds over the callers (served longest ago first), each
        caller's own tickets in arrival order."""
        ordered: list[Ticket] = []
        for priority in sorted({t.priority for t in self._waiting}):
            by_caller: dict[str, list[Ticket]] = {}
            for ticket in self._waiting:
                if ticket.priority == priority:
                    by_caller.setdefault(ticket.caller, []).append(ticket)
            callers = sorted(by_caller, key=lambda c: (self._last_served.get(c, 0), by_caller[c][0].number))
            for round_ in range(max(len(tickets) for tickets in by_caller.values())):
                ordered.extend(by_caller[c][round_] for c in callers if round_ < len(by_caller[c]))
        return ordered

    def prefix_seen(self, prefix: str, cached_tokens: int) -> None:
        """A run of `prefix` ended; `cached_tokens`, the fewest prompt tokens any of its model
        calls found in the model's cache, tells the prefix's length."""
        self.book.observed(prefix, cached_tokens)

    def _dispatch(self) -> None:
        """Grant slots while there are free ones and the measured rates pay for another run
        at once: in turn order, each ticket placed by the slot book, which may keep it waiting
        for the slot that holds its prefix while the next ticket gets its chance. A ticket
        that waits so is served first, on any free slot, before a caller who already went
        ahead of it once would go ahead again."""
        while self._active < min(self.limits.slots, self.book.parallel):
            order = self._order()
            now = self.clock()
            ahead: dict[str, int] = {}
            patient: list[Ticket] = []  # tickets that chose to wait, in turn order
            chosen: tuple[Ticket, Placement | Waiting | None] | None = None
            for index, ticket in enumerate(order):
                if self._running.get(ticket.caller, 0) >= self.limits.per_caller:
                    continue
                wanted = [t.prefix for t in order[index + 1 :] if t.prefix is not None]
                decided = self.book.place(ticket, now, ahead.get(ticket.prefix or "", 0), wanted)
                if isinstance(decided, Waiting):
                    ticket.waiting = decided
                    patient.append(ticket)
                    if ticket.prefix is not None:
                        ahead[ticket.prefix] = ahead.get(ticket.prefix, 0) + 1
                    continue
                if decided is None:
                    return
                overdue = next((t for t in patient if t.passed_by.get(ticket.caller, 0) >= 1), None)
                if overdue is not None:
                    wanted = [t.prefix for t in order if t is not overdue and t.prefix is not None]
                    chosen = overdue, self.book.place(overdue, now, 0, wanted, patient=False)
                else:
                    chosen = ticket, decided
                break
            if chosen is None or not isinstance(chosen[1], Placement):
                return
            self._grant(chosen[0], chosen[1])

    def _grant(self, ticket: Ticket, placement: Placement) -> None:
        ticket.placement = self.book.granted(ticket, placement, self.clock())
        ticket.waiting = None
        self._waiting.remove(ticket)
        for other in self._waiting:
            if other.caller != ticket.caller:
                other.passed_by[ticket.caller] = other.passed_by.get(ticket.caller, 0) + 1
        ticket.granted_at = self.clock()
        self._active += 1
        self._granted += 1
        self._running[ticket.caller] = self._running.get(ticket.caller, 0) + 1
        self._last_served[ticket.caller] = next(self._served)
        passed = max(ticket.passed_by.values(), default=0)
        self._waits.append(Wait(ticket.caller, ticket.priority, ticket.waited_seconds, passed))
        if self.listener is not None:
            self.listener.waited(ticket.waited_seconds)
            self.listener.placed(ticket.placement)
        ticket._notify()

    def _notify_waiting(self) -> None:
        if self.listener is not None:
            self.listener.waiting(len(self._waiting))
        for ticket in self._waiting:
            ticket._notify()
