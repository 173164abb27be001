"""The tools over datasets: list what the caller can read, describe a dataset, run a query,
search a dataset's rows by meaning, list a namespace's active links. Queries go through the
same `QueryTools` as the agents, so the checker, the read-only connection and the limits are
the same."""

from __future__ import annotations

from typing import Any

from mcp_types import CallToolResult
from pydantic import Field

from datawell.mcp.calls import Call, NamespaceArguments, ToolSpec, readable_namespace
from datawell.mcp.results import WireModel, tool_result
from datawell.services import Services
from datawell.storage.access import NamespaceRef, Permission, permission_of, readable_namespaces
from datawell.storage.datasets import DatasetRef, get_dataset, list_datasets
from datawell.storage.hints import ColumnHint
from datawell.storage.links import active_links
from datawell.storage.tables import User
from datawell.tools.catalog import describe_values, table_info, with_contents

SCHEME = "datawell"
MAX_SEARCH_ROWS = 100


def schema_uri(owner: str, namespace: str, dataset: str) -> str:
    return f"{SCHEME}://{owner}/{namespace}/{dataset}/schema"


class DatasetSummary(WireModel):
    name: str
    description: str
    fields: list[str]
    schema_uri: str = Field(description="The resource with the dataset's schema")


class NamespaceListing(WireModel):
    owner: str
    namespace: str
    access: Permission = Field(description="`write` for your own namespaces and write grants, else `read`")
    datasets: list[DatasetSummary]


class ListDatasetsArguments(WireModel):
    namespace: str | None = Field(
        None, description="Only this namespace (`name` or `owner/name`); every readable namespace when absent"
    )


class ListDatasetsOutput(WireModel):
    namespaces: list[NamespaceListing]


class FieldDescription(WireModel):
    name: str
    type: str = Field(description="integer, real, text, boolean or timestamp (`text` until data arrives)")
    description: str
    samples: list[str | int | float] = Field(
        description="Text: its most frequent values (all of them when few); numbers: the smallest and the largest; "
        "timestamps: the earliest and the latest, as UTC text `YYYY-MM-DD` or `YYYY-MM-DD HH:MM:SS`"
    )
    values: str = Field(description="The field's values as the models' catalog describes them")


class DatasetDescription(WireModel):
    owner: str
    namespace: str
    dataset: str
    description: str
    row_count: int
    fields: list[FieldDescription]


class DescribeArguments(NamespaceArguments):
    dataset: str = Field(min_length=1, description="The dataset's name")


class QueryArguments(NamespaceArguments):
    query: str = Field(
        min_length=1,
        description="A read-only SQL SELECT over the namespace's datasets (see docs/query-language.md)",
    )


class QueryOutput(WireModel):
    query: str = Field(description="The query that ran")
    rows: list[dict[str, Any]] = Field(description="Result rows; `__metadata` holds the dataset, row id and score")
    truncated: bool = Field(description="The row cap cut the result")


class SearchArguments(DescribeArguments):
    text: str = Field(min_length=1, description="What the rows should be about")
    limit: int = Field(10, ge=1, le=MAX_SEARCH_ROWS, description="How many rows at most")


class LinkItem(WireModel):
    id: str
    origin: str = Field(description="`namespace/dataset.field`")
    destination: str = Field(description="`namespace/dataset.field`")
    match_type: str
    hits: int
    score: float
    reason: str


class LinksOutput(WireModel):
    owner: str
    namespace: str
    links: list[LinkItem]


async def list_readable(call: Call, arguments: ListDatasetsArguments) -> CallToolResult:
    if arguments.namespace is not None:
        namespaces = [await readable_namespace(call, arguments.namespace)]
    else:
        async with call.services.db.session() as session:
            namespaces = await readable_namespaces(session, call.user)
    return tool_result(ListDatasetsOutput(namespaces=[await listing(call, n) for n in namespaces]))


async def listing(call: Call, namespace: NamespaceRef) -> NamespaceListing:
    async with call.services.db.session() as session:
        held = await permission_of(session, call.user, namespace)
        datasets = await list_datasets(session, namespace)
    return NamespaceListing(
        owner=namespace.owner,
        namespace=namespace.name,
        access=held or Permission.READ,
        datasets=[
            DatasetSummary(
                name=d.name,
                description=d.record.description or "",
                fields=list(d.record.schema_definition),
                schema_uri=schema_uri(namespace.owner, namespace.name, d.name),
            )
            for d in datasets
        ],
    )


async def readable_datasets(services: Services, user: User) -> list[DatasetRef]:
    """Every dataset of every namespace the user may read."""
    async with services.db.session() as session:
        return [d for n in await readable_namespaces(session, user) for d in await list_datasets(session, n)]


async def description(services: Services, dataset: DatasetRef) -> DatasetDescription:
    [table] = await with_contents(services.db, services.rows, [(dataset, table_info(dataset, dataset.name))])
    return DatasetDescription(
        owner=dataset.namespace.owner,
        namespace=dataset.namespace.name,
        dataset=dataset.name,
        description=table.description,
        row_count=table.row_count,
        fields=[
            FieldDescription(
                name=name,
                type=kind,
                description=table.column_descriptions.get(name, ""),
                samples=_samples(table.hints.get(name)),
                values=describe_values(table.hints[name], table.row_count) if name in table.hints else "",
            )
            for name, kind in table.columns.items()
        ],
    )


def _samples(hint: ColumnHint | None) -> list[str | int | float]:
    if hint is None:
        return []
    return list(hint.values) if hint.values else [v for v in (hint.low, hint.high) if v is not None]


async def describe(call: Call, arguments: DescribeArguments) -> CallToolResult:
    namespace = await readable_namespace(call, arguments.namespace)
    async with call.services.db.session() as session:
        dataset = await get_dataset(session, namespace, arguments.dataset)
    return tool_result(await description(call.services, dataset))


async def run_query(call: Call, arguments: QueryArguments) -> CallToolResult:
    namespace = await readable_namespace(call, arguments.namespace)
    result = await call.services.query_tools.run(call.user, namespace, arguments.query)
    return tool_result(QueryOutput(query=result.query, rows=result.rows, truncated=result.truncated))


def quoted_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quoted_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


async def search(call: Call, arguments: SearchArguments) -> CallToolResult:
    """A QL query ranked by `semantic()`, so the search is checked and limited like any query."""
    namespace = await readable_namespace(call, arguments.namespace)
    async with call.services.db.session() as session:
        dataset = await get_dataset(session, namespace, arguments.dataset)
    # The schema's fields, not `*`: the internal columns are noise here, and `__metadata`
    # already carries each row's id and score.
    fields = ", ".join(quoted_name(f) for f in dataset.record.schema_definition)
    relevance = f"semantic({quoted_text(arguments.text)})"
    query = (
        f"SELECT {fields} FROM {quoted_name(dataset.name)} WHERE {relevance} > 0 "
        f"ORDER BY {relevance} DESC LIMIT {arguments.limit}"
    )
    result = await call.services.query_tools.run(call.user, namespace, query)
    return tool_result(QueryOutput(query=result.query, rows=result.rows, truncated=result.truncated))


async def links(call: Call, arguments: NamespaceArguments) -> CallToolResult:
    namespace = await readable_namespace(call, arguments.namespace)
    async with call.services.db.session() as session:
        found = await active_links(session, namespace.id)
    items = [LinkItem.model_validate(link, from_attributes=True) for link in found]
    return tool_result(LinksOutput(owner=namespace.owner, namespace=namespace.name, links=items))


TOOLS = (
    ToolSpec(
        name="list_datasets",
        title="List datasets",
        description=(
            "Lists the namespaces you can read (your own and those shared with you) and their datasets: "
            "name, description, fields. Give `namespace` to list only that one."
        ),
        arguments=ListDatasetsArguments,
        output=ListDatasetsOutput,
        handler=list_readable,
    ),
    ToolSpec(
        name="describe_dataset",
        title="Describe a dataset",
        description=(
            "Describes one dataset: its description, row count, and each field's type, description and a few "
            "sample values. Use the field names exactly as given when writing queries."
        ),
        arguments=DescribeArguments,
        output=DatasetDescription,
        handler=describe,
    ),
    ToolSpec(
        name="run_query",
        title="Run a query",
        description=(
            "Runs a read-only SQL SELECT over the namespace's datasets (tables are dataset names; "
            "`owner.namespace.dataset` reaches a namespace shared with you; `semantic('text')` scores rows by "
            "meaning). Returns the rows. Anything but one SELECT is refused."
        ),
        arguments=QueryArguments,
        output=QueryOutput,
        handler=run_query,
    ),
    ToolSpec(
        name="semantic_search",
        title="Search rows by meaning",
        description="Finds the rows of one dataset that are closest in meaning to a text, best first.",
        arguments=SearchArguments,
        output=QueryOutput,
        handler=search,
    ),
    ToolSpec(
        name="list_links",
        title="List active links",
        description=(
            "Lists the active links of a namespace: fields of two datasets that hold the same things, "
            "which is how its datasets join."
        ),
        arguments=NamespaceArguments,
        output=LinksOutput,
        handler=links,
    ),
)
