"""Value hints: per column, the facts a query writer needs to write literals that match the
data (every value of a text column with few of them, the range of numbers and timestamps and
the form timestamps are kept in, how often a column is empty), and the row count.

They are computed with SQL aggregates over the dataset's row table whenever its rows change
(`refresh`: after a publish, a clear, a cancelled publish) and stored in `column_hints`, so
the catalog reads one small record per dataset instead of the rows. Datasets whose rows
changed before hints existed get theirs on the catalog's first read (`hints_of`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ValidationError
from sqlalchemy.dialects import postgresql, sqlite

from datawell.storage.db import Database
from datawell.storage.rows import RowStore, dataset_columns
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
        if not await connection.run_sync(lambda c: sa.inspect(c).has_table(table.name)):
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


async def refresh(db: Database, rows: RowStore, dataset: Dataset) -> TableHints:
    """Compute the dataset's hints from its rows as they are now and store them."""
    started = utcnow()
    hints = await compute(rows, dataset)
    insert = (postgresql.insert if db.dialect == "postgresql" else sqlite.insert)(DatasetHints)
    values = insert.values(dataset_id=dataset.id, hints=hints.model_dump(exclude_defaults=True), computed_at=started)
    statement = values.on_conflict_do_update(
        index_elements=[DatasetHints.dataset_id],
        set_={"hints": values.excluded.hints, "computed_at": values.excluded.computed_at},
        # Two refreshes at once (two publishes): the one that began last read the newest rows.
        where=DatasetHints.computed_at <= values.excluded.computed_at,
    )
    async with db.session() as session:
        await session.execute(statement)
    return hints


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
