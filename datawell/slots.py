"""Which slot a run takes, and whether it takes one now: decided by cost, not by arrival.

The scheduler (`datawell.scheduler`) decides whose turn it is (priority, round robin between
callers); `SlotBook` decides where that turn goes. A run of a question names its prompt
prefix (`graphs.prefix.prefix_key`: the namespace and the prefix prompt's version), and the
book remembers which slot last ran each prefix and which prefixes the embedded model keeps
in its host-RAM prompt cache. For a run it then picks, cheapest first:

- `hit`: a free slot that holds the run's prefix;
- `restored`: any free slot, when the prefix is in the model's prompt cache (llama.cpp copies
  it back in milliseconds instead of reading it again);
- wait: no free slot now, when the slot that holds (or is reading) the prefix frees sooner
  than reading the prefix elsewhere would cost (`prefix tokens / prefill rate`, times one plus
  the runs holding slots: a prefill takes every core, so every run beside it waits it out);
- `miss`: a free slot, the prefix read again.

And it runs no more runs at once than the measured decode rates pay for (`Rates.parallel`):
a further sequence only when the machine's total decode rate with it is higher than without.

The book follows llama.cpp's server as its source reads (docs/decisions.md, issue 52): a
request goes to the idle sequence sharing the longest prompt start; when a task starts, each
other idle sequence's prompt is saved to the host-RAM cache (`cache_idle_slots`, on by
default), as is a prompt a sequence is about to lose. With `shares` the runtime makes it save
every call's prompt as the call ends (`RuntimeOptions.share_prompts`), so a run's prefix is in
that cache once the run is over, and the runs of one namespace that waited for it then start
together on every free slot. Without a cost model (hosted models) every run goes to any free
slot, decided `none`."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

Decision = Literal["hit", "restored", "miss", "none"]
DECISIONS: tuple[Decision, ...] = ("hit", "restored", "miss", "none")
CACHED_PREFIXES = 32  # the host-RAM cache's 1 GiB holds about 36 prefixes of 1,100 tokens
DEFAULT_WARM_RUN_SECONDS = 8.0  # a warm question on the idle machine: 6.5-7.7 s (docs/decisions.md)


@dataclass(frozen=True)
class Rates:
    """The machine's measured rates for the embedded model (settings `DATAWELL_MODEL_*`).

    `decode` maps sequences decoding at once to the tokens per second of all of them
    together; between two measured counts the rate is interpolated, past the largest no
    further gain is assumed."""

    prefill: float  # prompt tokens per second, one sequence reading
    decode: Mapping[int, float]
    prefix_tokens: int  # a prefix's length until one of its runs was observed
    observed_prefill: Callable[[], float | None] = lambda: None  # the runtime's own figure, when it has one

    def decode_rate(self, sequences: int) -> float:
        measured = sorted(self.decode.items())
        if not measured:
            return 0.0
        below = [(n, r) for n, r in measured if n <= sequences]
        above = [(n, r) for n, r in measured if n >= sequences]
        if not below:
            return measured[0][1]
        if not above:
            return measured[-1][1]
        (n0, r0), (n1, r1) = below[-1], above[0]
        return r0 if n0 == n1 else r0 + (r1 - r0) * (sequences - n0) / (n1 - n0)

    def parallel(self, slots: int) -> int:
        """The most sequences worth running at once: each further one must raise the total
        decode rate, or the runs finish sooner in turn."""
        worth = 1
        while worth < slots and self.decode_rate(worth + 1) > self.decode_rate(worth):
            worth += 1
        return worth

    def prefill_rate(self) -> float:
        return self.observed_prefill() or self.prefill


@dataclass(frozen=True)
class Placement:
    """Where a run went and why: its slot, how its prefix was found, and the reason (for the
    run's trace and the metrics)."""

    slot: int
    decision: Decision
    reason: str
    waited_for_prefix: bool = False


@dataclass(frozen=True)
class Waiting:
    """A run that waits, though a slot is free, for the slot holding its prefix."""

    slot: int
    reason: str


@dataclass
class Slot:
    number: int
    prefix: str | None = None  # the prefix of its last run
    running: object | None = None  # the ticket holding it
    since: float = 0.0  # granted at, or freed at
    expected_seconds: float = 0.0  # the running run's whole expected time


class Run(Protocol):
    """What the book needs of a scheduler ticket."""

    prefix: str | None
    waiting: Waiting | None  # set while it waits for its prefix's slot


@dataclass
class SlotBook:
    slots: int
    rates: Rates | None = None  # None: no cost model, any free slot
    shares: bool = False  # the model saves every call's prompt to its cache (`RuntimeOptions.share_prompts`)
    warm_run_seconds: float = DEFAULT_WARM_RUN_SECONDS
    table: list[Slot] = field(default_factory=list)
    cached: OrderedDict[str, None] = field(default_factory=OrderedDict)  # prefixes in the model's prompt cache
    prefix_tokens: dict[str, int] = field(default_factory=dict)  # observed lengths

    def __post_init__(self) -> None:
        self.table = [Slot(n) for n in range(self.slots)]

    @property
    def parallel(self) -> int:
        return self.rates.parallel(self.slots) if self.rates else self.slots

    def free(self) -> list[Slot]:
        return [s for s in self.table if s.running is None]

    def prefill_seconds(self, prefix: str) -> float:
        assert self.rates is not None
        return self.prefix_tokens.get(prefix, self.rates.prefix_tokens) / self.rates.prefill_rate()

    def place(
        self, run: Run, now: float, ahead: int, wanted: Iterable[str], patient: bool = True
    ) -> Placement | Waiting | None:
        """Where `run` goes now; `Waiting` when it should wait for the slot holding its
        prefix (never when not `patient`); None when no slot is free. `ahead`: runs of the
        same prefix before it in the queue that wait too; `wanted`: the prefixes other waiting
        runs need, whose slots a miss leaves alone if it can."""
        free = self.free()
        if not free:
            return None
        prefix = run.prefix
        if self.rates is None or prefix is None:
            reason = "no prompt prefix to keep" if prefix is None else "no cost model (a hosted model): any free slot"
            return Placement(self._plain(free, set(wanted)).number, "none", reason)
        holding = [s for s in free if s.prefix == prefix]
        if holding:
            slot = max(holding, key=lambda s: s.since)
            return Placement(slot.number, "hit", f"slot {slot.number} holds the prefix")
        if prefix in self.cached:
            slot = self._plain(free, set(wanted))
            return Placement(slot.number, "restored", "the model's prompt cache holds the prefix")
        # Reading a prefix takes every core: each run holding a slot waits it out too, so a
        # miss costs its reading once for itself and once for every run beside it.
        running = sum(1 for s in self.table if s.running is not None)
        prefill = self.prefill_seconds(prefix) * (1 + running)
        busy = [s for s in self.table if s.running is not None and s.prefix == prefix]
        if busy and patient:
            holder = min(busy, key=lambda s: s.since + s.expected_seconds)
            wait = max(0.0, holder.since + holder.expected_seconds - now) + ahead * self.warm_run_seconds
            if wait < prefill:
                return Waiting(
                    holder.number,
                    f"waited for slot {holder.number}, which holds the prefix (about {wait:.1f} s) rather than "
                    f"reading it elsewhere (about {prefill:.1f} s)",
                )
            reason = (
                f"slot {holder.number} holds the prefix but frees in about {wait:.1f} s; reading it: {prefill:.1f} s"
            )
        elif busy:
            reason = "it waited for the slot holding its prefix until another caller would have gone first twice"
        else:
            reason = f"no slot holds the prefix: read in about {prefill:.1f} s"
        return Placement(self._plain(free, set(wanted) - {prefix}).number, "miss", reason)

    def _plain(self, free: list[Slot], wanted: set[str]) -> Slot:
        """An empty slot, else the least recently used one whose prefix no waiting run needs."""
        spare = [s for s in free if s.prefix not in wanted] or free
        return min(spare, key=lambda s: (s.prefix is not None, s.since))

    def granted(self, run: Run, placement: Placement, now: float) -> Placement:
        """Book the run on its slot; returns the placement, with the reason it waited if it did."""
        slot = self.table[placement.slot]
        prefix = run.prefix
        # llama.cpp saves the other idle sequences' prompts when a task starts, and the prompt
        # a sequence is about to lose for another.
        for other in self.table:
            if other is not slot and other.running is None and other.prefix is not None:
                self._cache(other.prefix)
        if slot.prefix is not None and slot.prefix != prefix:
            self._cache(slot.prefix)
        slot.running, slot.since = run, now
        slot.prefix = prefix if prefix is not None else slot.prefix
        miss = placement.decision == "miss" and prefix is not None and self.rates is not None
        prefill = self.prefill_seconds(prefix) if miss and prefix is not None else 0.0
        slot.expected_seconds = self.warm_run_seconds + prefill
        if run.waiting is not None:
            reason = f"{run.waiting.reason}; then {placement.reason}"
            return Placement(placement.slot, placement.decision, reason, waited_for_prefix=True)
        return placement

    def released(self, number: int, now: float, held: float, decision: Decision) -> None:
        slot = self.table[number]
        slot.running, slot.since = None, now
        if self.shares and slot.prefix is not None:
            self._cache(slot.prefix)
        if decision in ("hit", "restored"):
            self.warm_run_seconds = 0.8 * self.warm_run_seconds + 0.2 * held

    def observed(self, prefix: str, tokens: int) -> None:
        """A run of `prefix` found `tokens` prompt tokens in the model's cache at its least:
        the prefix's length when the model kept it, a little more after a miss (the second
        call keeps the first's question too), a few tokens when it kept another prompt's
        start. The most seen is kept, so such a run does not make the prefix look free."""
        self.prefix_tokens[prefix] = max(self.prefix_tokens.get(prefix, 0), tokens)

    def _cache(self, prefix: str) -> None:
        self.cached[prefix] = None
        self.cached.move_to_end(prefix)
        while len(self.cached) > CACHED_PREFIXES:
            self.cached.popitem(last=False)
