"""Value hints: per column, the facts a query writer needs to write literals that match the
data (every value of a text column with few of them, the range of numbers and timestamps and
the form timestamps are kept in, how often a column is empty), and the row count.

They are computed with SQL aggregates over the dataset's row table whenever its rows change
(`refresh`: after a publish, a clear, a cancelled publish) and stored in `column_hints`, so
the catalog reads one small record per dataset instead of the rows. Datasets whose rows
changed before hints existed get theirs on the catalog's first read (`hints_of`).

A first ingestion, whose stage becomes the dataset's table, needs no pass over the table:
`BatchHints` gathers the same facts from the batches as they are written, and `observed`
makes the same hints of them as `compute` would of the table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import sqlalchemy as sa
from pydantic import BaseModel, ValidationError
from sqlalchemy.dialects import postgresql, sqlite

from datawell.storage.arrow_values import ARROW_TYPES
from datawell.storage.db import Database, has_table
from datawell.storage.row_tables import dataset_columns
from datawell.storage.rows import RowStore
from datawell.storage.tables import Dataset, DatasetHints, utcnow

TEXT_VALUES = 12  # a text column with at most this many distinct values is listed whole
SAMPLE = 10_000  # a text column's values grouped to tell a category from free text
EXAMPLES = 3  # frequent values shown of a text column with more
VALUE_CHARS = 40  # a longer value is cut: enough to recognise it, cheap in a prompt
DATE = "YYYY-MM-DD"
DATE_TIME = "YYYY-MM-DD HH:MM:SS"


class ColumnHint(BaseModel):
    type: str
    nulls: int = 0
    distinct: int | None = None  # text: distinct non-null values
    distinct_at_least: int | None = None  # text, instead when only a sample was grouped: its distinct values
    # text: every value when few and repeated (a category; see `_describe_text`), else the
    # EXAMPLES most frequent; most frequent first, ties in value order (a render is the same
    # for the same rows)
    values: list[str] = []
    low: float | int | str | None = None  # numbers: themselves; timestamps: UTC in `format`
    high: float | int | str | None = None
    format: str | None = None  # timestamps: DATE when every value is at midnight, else DATE_TIME


class TableHints(BaseModel):
    rows: int
    columns: dict[str, ColumnHint]


async def compute(rows: RowStore, dataset: Dataset) -> TableHints:
    """The hints of the dataset's published rows, in one pass over the table where it can be.

    Each text column's first SAMPLE values are grouped first (cheap: a bounded read). A column
    with few values there may be a category: the pass over the whole table counts its values
    the sample did not see, so a rare one is still found (and then that column alone is
    grouped whole). Other text columns keep the sample's most frequent values as examples:
    their exact distinct count would cost a sort of the column."""
    table = rows.table(dataset)
    types = dataset_columns(dataset)
    async with rows.engine.connect() as connection:
        if not await has_table(connection, table.name):
            return TableHints(rows=0, columns={})
        texts = [name for name, kind in types.items() if kind == "text"]
        samples = {name: await _group(connection, table.c[name], SAMPLE) for name in texts}
        candidates = {name: [v for v, _ in g.counts] for name, g in samples.items() if g.distinct <= TEXT_VALUES}
        aggregates: list[Any] = [sa.func.count()]
        for name, kind in types.items():
            column = table.c[name]
            aggregates.append(sa.func.count(column))
            if kind in ("integer", "real", "timestamp"):
                aggregates += [sa.func.min(column), sa.func.max(column)]
            if kind == "timestamp":
                aggregates.append(sa.func.max(_time_of_day(column, rows.dialect)))
            if name in candidates:  # values the sample did not see
                aggregates.append(sa.func.count(sa.case((column.not_in(candidates[name]), 1))))
        summary = list((await connection.execute(sa.select(*aggregates))).one())
        count = int(summary.pop(0))
        hints = {}
        for name, kind in types.items():
            hint = ColumnHint(type=kind, nulls=count - int(summary.pop(0)))
            if kind in ("integer", "real"):
                hint.low, hint.high = summary.pop(0), summary.pop(0)
            elif kind == "timestamp":
                low, high, latest = summary.pop(0), summary.pop(0), summary.pop(0)
                if low is not None:
                    hint.format = DATE if latest in ("00:00:00", time(0)) else DATE_TIME
                    hint.low, hint.high = _stamp(low, hint.format), _stamp(high, hint.format)
            unseen = int(summary.pop(0)) if name in candidates else 0
            if kind == "text" and hint.nulls < count:
                filled = count - hint.nulls
                grouped = samples[name]
                if name in candidates and grouped.total < filled:
                    # Every value is in the sample (ordered by how often it is there), or a
                    # rare one is not: then this column alone is grouped whole.
                    whole = replace(grouped, total=filled)
                    grouped = whole if unseen == 0 else await _group(connection, table.c[name], None)
                _describe_text(hint, grouped, filled)
            hints[name] = hint
    return TableHints(rows=count, columns=hints)


@dataclass(frozen=True)
class _Grouped:
    counts: list[tuple[str, int]]  # (value, rows), the most frequent first; at most TEXT_VALUES
    distinct: int  # distinct values among those grouped
    total: int  # non-null values grouped: all of the column's, or SAMPLE


async def _group(connection: Any, column: Any, limit: int | None) -> _Grouped:
    """A text column's most frequent values among its first `limit` non-null ones (all when
    None); the groups and the values grouped are counted by windows, in the same read."""
    source = sa.select(column.label("value")).where(column.is_not(None))
    value = (source if limit is None else source.limit(limit)).subquery().c.value
    frequency = sa.func.count().label("frequency")
    query = (
        sa.select(value, frequency, sa.func.count().over(), sa.func.sum(sa.func.count()).over())
        .group_by(value)
        .order_by(frequency.desc(), value)
        .limit(TEXT_VALUES)
    )
    found = (await connection.execute(query)).all()
    if not found:
        return _Grouped([], 0, 0)
    return _Grouped([(row[0], int(row[1])) for row in found], int(found[0][2]), int(found[0][3]))


def _describe_text(hint: ColumnHint, grouped: _Grouped, filled: int) -> None:
    """All values when few and some repeat: a category the query must spell exactly. A column
    of few values that never repeat (an identifier, a name) gets examples: listing them all
    would only lengthen the prompt."""
    counts = sorted(grouped.counts, key=lambda c: (-c[1], c[0]))
    if grouped.total < filled:
        hint.distinct_at_least = grouped.distinct
        category = False
    else:
        hint.distinct = grouped.distinct
        category = grouped.distinct <= EXAMPLES or (grouped.distinct <= TEXT_VALUES and grouped.distinct < filled)
    hint.values = [_cut(value) for value, _ in (counts if category else counts[:EXAMPLES])]


def _time_of_day(column: Any, dialect: str) -> Any:
    """The UTC time of day of a timestamp, as a value whose maximum is midnight only when
    every value is: SQLite keeps timestamps as text `YYYY-MM-DD HH:MM:SS.ffffff`."""
    if dialect == "sqlite":
        return sa.func.substr(column, 12, 8)
    return sa.cast(sa.func.timezone("UTC", column), sa.Time)


def _stamp(value: datetime, form: str) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%d" if form == DATE else "%Y-%m-%d %H:%M:%S")


def _cut(value: str) -> str:
    return value if len(value) <= VALUE_CHARS else value[: VALUE_CHARS - 1] + "…"


@dataclass
class _Facts:
    """What the batches so far tell of one column."""

    kind: str
    nulls: int = 0
    low: Any = None  # integers, reals and timestamps
    high: Any = None
    timed: bool = False  # timestamps: one is not at midnight
    sample: list[pa.Array] = field(default_factory=list)  # text: the first SAMPLE non-null values
    sampled: int = 0
    groups: pa.StructArray | None = None  # text: the sample's values and their counts, once complete
    unseen: int = 0  # text with few values in the sample: later values that are none of them

    def observe(self, column: pa.Array, dialect: str) -> None:
        self.nulls += column.null_count
        if self.kind == "text":
            self._observe_text(column)
        elif self.kind in ("integer", "real", "timestamp") and column.null_count < len(column):
            found = pc.min_max(column)
            low, high = found["min"].as_py(), found["max"].as_py()
            self.low = low if self.low is None else min(self.low, low)
            self.high = high if self.high is None else max(self.high, high)
            self.timed = self.timed or (self.kind == "timestamp" and _timed(column, dialect))

    def _observe_text(self, column: pa.Array) -> None:
        if self.groups is not None and self.candidates is None:
            return  # many values in the sample: nothing after it counts
        values = pc.drop_null(column)
        if self.groups is None:
            taken = values.slice(0, SAMPLE - self.sampled)
            self.sample.append(taken)
            self.sampled += len(taken)
            if self.sampled < SAMPLE:
                return
            self.grouped_sample()
            values = values.slice(len(taken))
        if self.candidates is not None and len(values):
            self.unseen += len(values) - int(pc.sum(pc.is_in(values, value_set=self.candidates)).as_py())

    def grouped_sample(self) -> pa.StructArray:
        if self.groups is None:
            self.groups = pc.value_counts(pa.concat_arrays([pa.array([], pa.string()), *self.sample]))
            self.sample = []
        return self.groups

    @property
    def candidates(self) -> pa.Array | None:
        """The sample's values when they are few (the column may be a category)."""
        groups = self.grouped_sample()
        return groups.field("values") if len(groups) <= TEXT_VALUES else None


def _timed(column: pa.Array, dialect: str) -> bool:
    """Whether a timestamp is not at midnight, as `_time_of_day` tells: SQLite's to the second."""
    stamps = pc.floor_temporal(column, unit="second") if dialect == "sqlite" else column
    return bool(pc.any(pc.not_equal(stamps, pc.floor_temporal(column, unit="day"))).as_py())


class BatchHints:
    """Gathers what `compute` finds on a table holding exactly the observed rows in the order
    observed, from the typed batches an ingestion writes (one column per field, of its
    `ARROW_TYPES` type), by Arrow kernels as they are written, instead of a pass over the
    table after. One thread observes."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.rows = 0
        self.schema: pa.Schema | None = None
        self.exact = True  # every batch had the first one's columns, of types the store keeps
        self.facts: dict[str, _Facts] = {}

    def observe(self, batch: pa.RecordBatch) -> None:
        if self.schema is None:
            self.schema = batch.schema
            self.exact = all(f.type in _KINDS for f in batch.schema)
            self.facts = {f.name: _Facts(_KINDS.get(f.type, "")) for f in batch.schema}
        self.exact = self.exact and batch.schema.equals(self.schema)
        if self.exact:
            self.rows += batch.num_rows
            for name, facts in self.facts.items():
                facts.observe(batch.column(name), self.dialect)


_KINDS = {arrow: kind for kind, arrow in ARROW_TYPES.items()}


async def observed(rows: RowStore, dataset: Dataset, batches: BatchHints) -> TableHints | None:
    """What `compute` gives when the dataset's table holds exactly the rows `batches` observed
    (the stage they were written to became the table), or None when they were not of the
    dataset's types. A category with a value its sample missed is grouped whole in SQL, as
    `compute` does; nothing else reads the table."""
    types = dataset_columns(dataset)
    expected = pa.schema([(name, ARROW_TYPES[kind]) for name, kind in types.items()])
    if not batches.exact or (batches.schema is not None and not batches.schema.equals(expected)):
        return None
    count, hints = batches.rows, {}
    async with rows.engine.connect() as connection:
        for name, kind in types.items():
            facts = batches.facts.get(name, _Facts(kind))
            hint = ColumnHint(type=kind, nulls=facts.nulls)
            if kind in ("integer", "real"):
                hint.low, hint.high = facts.low, facts.high
            elif kind == "timestamp" and facts.low is not None:
                hint.format = DATE_TIME if facts.timed else DATE
                hint.low, hint.high = _stamp(facts.low, hint.format), _stamp(facts.high, hint.format)
            if kind == "text" and hint.nulls < count:
                filled = count - hint.nulls
                grouped = await _sample_grouped(connection, facts.grouped_sample(), facts.sampled, rows.dialect)
                if facts.candidates is not None and grouped.total < filled:
                    whole = replace(grouped, total=filled)
                    table = rows.table(dataset)
                    grouped = whole if facts.unseen == 0 else await _group(connection, table.c[name], None)
                _describe_text(hint, grouped, filled)
            hints[name] = hint
    return TableHints(rows=count, columns=hints)


async def _sample_grouped(connection: Any, groups: pa.StructArray, total: int, dialect: str) -> _Grouped:
    """`_group` of a sample grouped by Arrow: its TEXT_VALUES most frequent values, ties in
    the order the store sorts text in. SQLite compares bytes, as Arrow does; PostgreSQL sorts
    by the database's collation, so it orders the groups itself."""
    values, counts = groups.field("values"), groups.field("counts")
    top: Iterable[tuple[str, int]]
    if len(groups) <= TEXT_VALUES:
        top = zip(values.to_pylist(), counts.to_pylist(), strict=True)
    elif dialect == "postgresql":
        query = sa.text(
            "SELECT v, f FROM unnest(CAST(:v AS text[]), CAST(:f AS bigint[])) AS g(v, f) ORDER BY f DESC, v LIMIT :n"
        )
        found = await connection.execute(query, {"v": values.to_pylist(), "f": counts.to_pylist(), "n": TEXT_VALUES})
        top = found.tuples().all()
    else:
        order = pc.sort_indices(pa.table({"v": values, "f": counts}), [("f", "descending"), ("v", "ascending")])
        first = order.slice(0, TEXT_VALUES)
        top = zip(values.take(first).to_pylist(), counts.take(first).to_pylist(), strict=True)
    return _Grouped([(value, int(frequency)) for value, frequency in top], len(groups), total)


async def refresh(db: Database, rows: RowStore, dataset: Dataset) -> TableHints:
    """Compute the dataset's hints from its rows as they are now and store them."""
    started = utcnow()
    hints = await compute(rows, dataset)
    await store(db, dataset, hints, started)
    return hints


async def store(db: Database, dataset: Dataset, hints: TableHints, started: datetime) -> None:
    """Keep `hints`, of the rows as they were at `started`, unless newer ones are kept."""
    insert = (postgresql.insert if db.dialect == "postgresql" else sqlite.insert)(DatasetHints)
    values = insert.values(dataset_id=dataset.id, hints=hints.model_dump(exclude_defaults=True), computed_at=started)
    statement = values.on_conflict_do_update(
        index_elements=[DatasetHints.dataset_id],
        set_={"hints": values.excluded.hints, "computed_at": values.excluded.computed_at},
        # Two refreshes at once (two publishes): the one that began last read the newest rows.
        where=DatasetHints.computed_at <= values.excluded.computed_at,
    )
    async with db.session(durable=False) as session:
        await session.execute(statement)


async def hints_of(db: Database, rows: RowStore, datasets: Sequence[Dataset]) -> dict[str, TableHints]:
    """Dataset id -> its stored hints, in one query; computed and stored first for a dataset
    that has none (its rows changed before hints existed)."""
    ids = [d.id for d in datasets]
    async with db.read() as session:
        query = sa.select(DatasetHints.dataset_id, DatasetHints.hints).where(DatasetHints.dataset_id.in_(ids))
        stored: dict[str, Any] = dict((await session.execute(query)).tuples().all())
    found: dict[str, TableHints] = {}
    for dataset in datasets:
        try:
            found[dataset.id] = TableHints.model_validate(stored[dataset.id])
        except (KeyError, ValidationError):
            found[dataset.id] = await refresh(db, rows, dataset)
    return found
