"""The DataLinks SDK's usage: the caller's model usage, item by item or a day at a time."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator
from starlette.requests import Request

from datawell.api.ingestions import NUMBER
from datawell.api.routing import Context, Router
from datawell.api.schemas import ApiModel
from datawell.errors import InvalidInput, SubError
from datawell.storage import agent_runs
from datawell.storage.tables import User

router = Router("datalinks")


class UsageQuery(ApiModel):
    on_or_after: datetime | None = None
    before: datetime | None = None

    @field_validator("on_or_after", "before", mode="before")
    @classmethod
    def not_a_number(cls, value: object) -> object:
        """pydantic reads a number as Unix seconds; the documented type is an ISO 8601 date-time."""
        if isinstance(value, str) and NUMBER.fullmatch(value.strip()):
            raise ValueError(f"expected an ISO 8601 date-time such as 2026-01-31T12:00:00Z, got {value!r}")
        return value

    @field_validator("on_or_after", "before")
    @classmethod
    def as_utc(cls, value: datetime | None) -> datetime | None:
        """A time without a zone is UTC."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    page_size: int = Field(25, ge=1, le=1000)
    page_cursor: str | None = Field(None, description="`meta.pageCursor` of the previous page, as JSON.")
    time_zone_for_aggregation: str = "UTC"


class UsageItem(ApiModel):
    timestamp: datetime
    tokens_used: int
    cost_usd: float = Field(0.0, alias="costUSD", description="Not priced: always 0.")


class UsageCursor(ApiModel):
    last_start_time: datetime
    last_observation_id: str


class UsageMeta(ApiModel):
    page_cursor: UsageCursor | None = None
    page_size: int


class UsageHistory(ApiModel):
    data: list[UsageItem]
    meta: UsageMeta


class DayUsage(ApiModel):
    date: str
    tokens_used: int
    cost_usd: float = Field(0.0, alias="costUSD")


class DayMeta(ApiModel):
    time_zone_for_aggregation: str


class UsageByDay(ApiModel):
    data: list[DayUsage]
    meta: DayMeta


def cursor_of(raw: str | None) -> tuple[datetime, str] | None:
    """The cursor as the SDK sends it back: `meta.pageCursor` as JSON."""
    if not raw:
        return None
    try:
        parsed = UsageCursor.model_validate_json(raw)
    except ValueError:
        raise InvalidInput(
            "invalid page cursor", sub_errors=[SubError("invalid_cursor", "pageCursor: not a cursor")]
        ) from None
    return parsed.last_start_time, parsed.last_observation_id


@router.get("/user/usage/history", UsageHistory, query=UsageQuery)
async def usage_history(request: Request, ctx: Context, user: User, query: UsageQuery) -> UsageHistory:
    """The caller's model usage, run by run

    One item per assistant run: when it started and the tokens its model calls spent
    (reported by the provider, else estimated). Cost is not priced."""
    async with ctx.services.db.read() as session:
        runs = await agent_runs.history(
            session, user, query.on_or_after, query.before, query.page_size + 1, cursor_of(query.page_cursor)
        )
    page = runs[: query.page_size]
    more = len(runs) > query.page_size
    cursor = UsageCursor(last_start_time=page[-1].created_at, last_observation_id=page[-1].id) if more else None
    return UsageHistory(
        data=[UsageItem(timestamp=r.created_at, tokens_used=r.tokens) for r in page],
        meta=UsageMeta(page_cursor=cursor, page_size=query.page_size),
    )


@router.get("/user/usage/by-day", UsageByDay, query=UsageQuery)
async def usage_by_day(request: Request, ctx: Context, user: User, query: UsageQuery) -> UsageByDay:
    """The caller's model usage per day

    The tokens of the caller's runs summed per day in `timeZoneForAggregation`."""
    try:
        zone = ZoneInfo(query.time_zone_for_aggregation)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(
            "unknown time zone",
            sub_errors=[SubError("invalid_time_zone", f"timeZoneForAggregation: {query.time_zone_for_aggregation!r}")],
        ) from None
    days: dict[str, int] = {}
    async with ctx.services.db.read() as session:
        for run in await agent_runs.history(session, user, query.on_or_after, query.before, 1_000_000):
            day = run.created_at.astimezone(zone).date().isoformat()
            days[day] = days.get(day, 0) + run.tokens
    return UsageByDay(
        data=[DayUsage(date=day, tokens_used=tokens) for day, tokens in sorted(days.items())],
        meta=DayMeta(time_zone_for_aggregation=query.time_zone_for_aggregation),
    )
