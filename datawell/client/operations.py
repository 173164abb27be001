"""Every REST operation, declared once as a method that builds a `Call`; the sync `Client`
and the `AsyncClient` send it with their own transport. The `operation` descriptor makes
`client.create_dataset(...)` return a `Dataset` on the one and an awaitable on the other,
with the same signature and types."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from datawell.client.calls import (
    API,
    Call,
    autorag_body,
    build_spec_body,
    dataset_path,
    examples_path,
    operation,
    returns,
    rows_params,
    segment,
    without_none,
)
from datawell.client.models import (
    AbortedUpload,
    Agent,
    AttemptList,
    AutoRagAnswer,
    BuildSpec,
    BuildSpecList,
    Cleared,
    CompletedPart,
    CompletedUpload,
    Curation,
    Dataset,
    DatasetCoordinate,
    DatasetList,
    Deleted,
    Example,
    ExampleList,
    Health,
    IngestionAttempt,
    IngestionDetail,
    Link,
    LinkList,
    Mark,
    NamespaceInfo,
    PartReceipt,
    PreparedUpload,
    Retried,
    RowsPage,
)
from datawell.client.run_records import (
    RunList,
    RunRecord,
)


class Operations:
    """The REST operations of SPEC.md and the ones the service adds (reads, lists, complete)."""

    @operation
    def health(self) -> Call[Health]:
        return Call("GET", "/health", returns(Health))

    @operation
    def openapi(self) -> Call[dict[str, Any]]:
        return Call("GET", f"{API}/openapi.json", returns(dict[str, Any]))

    # Datasets

    @operation
    def create_dataset(
        self, namespace: str, dataset: str, schema: dict[str, str], description: str = ""
    ) -> Call[Dataset]:
        """Create a dataset in the caller's own namespace (created with its first dataset)."""
        body = {"dataDescription": description, "schemaDefinition": schema}
        return Call("POST", f"{API}/ingest/new/{segment(namespace)}/{segment(dataset)}", returns(Dataset), body)

    @operation
    def list_datasets(self, owner: str, namespace: str) -> Call[DatasetList]:
        return Call("GET", f"{API}/datasets/{segment(owner)}/{segment(namespace)}", returns(DatasetList))

    @operation
    def get_dataset(self, owner: str, namespace: str, dataset: str) -> Call[Dataset]:
        return Call("GET", dataset_path("/datasets", owner, namespace, dataset), returns(Dataset))

    # BuildSpecs

    @operation
    def create_build_spec(
        self, sources: list[DatasetCoordinate], destination: DatasetCoordinate, payload: str
    ) -> Call[BuildSpec]:
        return Call("POST", f"{API}/build-specs", returns(BuildSpec), build_spec_body(sources, destination, payload))

    @operation
    def list_build_specs(self) -> Call[BuildSpecList]:
        return Call("GET", f"{API}/build-specs", returns(BuildSpecList))

    @operation
    def get_build_spec(self, build_spec_id: str) -> Call[BuildSpec]:
        return Call("GET", f"{API}/build-specs/{segment(build_spec_id)}", returns(BuildSpec))

    @operation
    def replace_build_spec(
        self,
        build_spec_id: str,
        sources: list[DatasetCoordinate],
        destination: DatasetCoordinate,
        payload: str,
        if_match: int | None = None,
    ) -> Call[BuildSpec]:
        """Replace the definition (the version is bumped); `if_match` refuses it (409) when the
        current version is another."""
        headers = {"If-Match": str(if_match)} if if_match is not None else {}
        body = build_spec_body(sources, destination, payload)
        return Call("PUT", f"{API}/build-specs/{segment(build_spec_id)}", returns(BuildSpec), body, headers=headers)

    @operation
    def delete_build_spec(self, build_spec_id: str) -> Call[None]:
        return Call("DELETE", f"{API}/build-specs/{segment(build_spec_id)}", None)

    # Uploads (see also upload(), which runs the whole sequence)

    @operation
    def prepare_upload(
        self, owner: str, namespace: str, dataset: str, filename: str, size: int
    ) -> Call[PreparedUpload]:
        path = dataset_path("/upload/multipart", owner, namespace, dataset) + "/prepare"
        return Call("POST", path, returns(PreparedUpload), {"filename": filename, "size": size})

    @operation
    def put_part(self, url: str, data: bytes) -> Call[PartReceipt]:
        """Send one part's bytes to its presigned URL (no bearer token: the URL is signed)."""
        return Call("PUT", url, returns(PartReceipt), content=data)

    @operation
    def complete_upload(
        self,
        owner: str,
        namespace: str,
        dataset: str,
        upload_id: str,
        key: str,
        parts: list[CompletedPart] | None = None,
    ) -> Call[CompletedUpload]:
        """Assemble the parts and queue the ingestion; `parts` (with their ETags) are checked
        against what was stored when given."""
        body: dict[str, Any] = {"uploadId": upload_id, "key": key}
        if parts is not None:
            body["parts"] = [p.model_dump(by_alias=True) for p in parts]
        path = dataset_path("/upload/multipart", owner, namespace, dataset) + "/complete"
        return Call("POST", path, returns(CompletedUpload), body)

    @operation
    def abort_upload(self, owner: str, namespace: str, dataset: str, upload_id: str, key: str) -> Call[AbortedUpload]:
        path = dataset_path("/upload/multipart", owner, namespace, dataset) + "/abort"
        return Call("POST", path, returns(AbortedUpload), {"uploadId": upload_id, "key": key})

    # Ingestions and data

    @operation
    def list_attempts(
        self,
        owner: str,
        namespace: str,
        dataset: str,
        before_created_at: datetime | None = None,
        page_size: int | None = None,
    ) -> Call[AttemptList]:
        """Newest first; pass `metadata.before_created_at` of one page to get the next."""
        params = without_none(
            beforeCreatedAt=before_created_at.isoformat() if before_created_at else None, pageSize=page_size
        )
        path = dataset_path("/data", owner, namespace, dataset) + "/ingest/attempts"
        return Call("GET", path, returns(AttemptList), params=params)

    @operation
    def get_attempt(self, ingestion_id: str) -> Call[IngestionDetail]:
        return Call("GET", f"{API}/ingestionTracking/{segment(ingestion_id)}", returns(IngestionDetail))

    @operation
    def retry(self, ingestion_id: str) -> Call[Retried]:
        return Call("POST", f"{API}/ingestionTracking/{segment(ingestion_id)}/retry", returns(Retried))

    @operation
    def cancel(self, ingestion_id: str) -> Call[IngestionAttempt]:
        """Stop a queued or running attempt; it ends CANCELLED and leaves no rows."""
        return Call("POST", f"{API}/ingestionTracking/{segment(ingestion_id)}/cancel", returns(IngestionAttempt))

    @operation
    def clear(self, owner: str, namespace: str, dataset: str) -> Call[Cleared]:
        """Irreversibly remove every row, vector and link of the dataset."""
        return Call("POST", dataset_path("/data", owner, namespace, dataset) + "/clear", returns(Cleared))

    # Rows back (see also export(), which streams a whole file)

    @operation
    def rows(
        self,
        owner: str,
        namespace: str,
        dataset: str,
        *,
        columns: list[str] | None = None,
        filter: str | None = None,
        cursor: str | None = None,
        page_size: int = 100,
    ) -> Call[RowsPage]:
        """One page of the dataset's rows in `__id` order; pass `metadata.next_cursor` as
        `cursor` for the next (None on the last page). `filter` is a query-language condition."""
        params = rows_params(columns, filter) | without_none(cursor=cursor, pageSize=page_size)
        return Call("GET", dataset_path("/data", owner, namespace, dataset) + "/rows", returns(RowsPage), params=params)

    # A dataset's life

    @operation
    def update_dataset(
        self,
        owner: str,
        namespace: str,
        dataset: str,
        *,
        description: str | None = None,
        schema: dict[str, str] | None = None,
        force: bool = False,
    ) -> Call[Dataset]:
        """Change the description and/or the whole schema: a new field is a new nullable column;
        removing a field that rows hold values in is refused (409) unless `force`."""
        body = without_none(dataDescription=description, schemaDefinition=schema)
        path = dataset_path("/data", owner, namespace, dataset) + "/inferDefinition"
        return Call("PUT", path, returns(Dataset), body, params={"force": "true"} if force else {})

    @operation
    def rename_dataset(self, owner: str, namespace: str, dataset: str, new_name: str) -> Call[Dataset]:
        path = dataset_path("/data", owner, namespace, dataset) + "/rename"
        return Call("POST", path, returns(Dataset), {"name": new_name})

    @operation
    def rename_namespace(self, owner: str, namespace: str, new_name: str) -> Call[NamespaceInfo]:
        path = f"{API}/data/{segment(owner)}/{segment(namespace)}/rename"
        return Call("POST", path, returns(NamespaceInfo), {"name": new_name})

    @operation
    def delete_dataset(self, owner: str, namespace: str, dataset: str) -> Call[Deleted]:
        """Irreversibly delete the dataset with its rows, vectors, links, files and the
        verified examples naming it; the name is free at once."""
        return Call("DELETE", dataset_path("/data", owner, namespace, dataset), returns(Deleted))

    # Questions (see also ask(), which streams the run's events)

    @operation
    def autorag(self, namespace: str, query: str, **options: Any) -> Call[AutoRagAnswer]:
        """Answer a question (the whole run, as one JSON answer). `options` are the AutoRAG
        request's other fields in snake case: username, helper_prompt, model, provider,
        models, conversation_id, web_search, caller_context."""
        body = autorag_body(namespace, query, **options)
        return Call("POST", f"{API}/query/autorag", returns(AutoRagAnswer), body, long_running=True)

    # Recorded runs (docs/operations.md)

    @operation
    def run(self, run_id: str) -> Call[RunRecord]:
        """A run's record: seen by the user who asked it (with its prompts) and by the owner
        of its namespace (without them)."""
        return Call("GET", f"{API}/runs/{segment(run_id)}", returns(RunRecord))

    @operation
    def runs(
        self,
        *,
        user: str | None = None,
        namespace_id: str | None = None,
        outcome: str | None = None,
        order: str = "newest",
        limit: int = 50,
    ) -> Call[RunList]:
        """The runs the caller asked and those in namespaces the caller owns, newest (or
        `order="slowest"`) first."""
        params = without_none(user=user, namespaceId=namespace_id, outcome=outcome, order=order, limit=limit)
        return Call("GET", f"{API}/runs", returns(RunList), params=params)

    # Ontology

    @operation
    def curate_links(
        self,
        namespace: str,
        dataset: str | None = None,
        model: str | None = None,
        provider: str | None = None,
        activate: bool = False,
    ) -> Call[Curation]:
        body = without_none(namespace=namespace, dataset=dataset, model=model, provider=provider, activate=activate)
        return Call("POST", f"{API}/ontology/curate-links", returns(Curation), body, long_running=True)

    @operation
    def list_links(
        self, namespace: str, owner: str | None = None, status: str | None = None, dataset: str | None = None
    ) -> Call[LinkList]:
        prefix = f"{segment(owner)}/" if owner else ""
        params = without_none(status=status, dataset=dataset)
        return Call("GET", f"{API}/ontology/{prefix}{segment(namespace)}/links", returns(LinkList), params=params)

    @operation
    def update_link(self, link_id: str, status: str) -> Call[Link]:
        return Call("PATCH", f"{API}/ontology/links/{segment(link_id)}", returns(Link), {"status": status})

    @operation
    def delete_link(self, link_id: str) -> Call[None]:
        return Call("DELETE", f"{API}/ontology/links/{segment(link_id)}", None)

    # Verified examples

    @operation
    def add_example(self, owner: str, namespace: str, question: str, query: str) -> Call[Example]:
        """Store a question and the query that answers it (checked as the caller first)."""
        body = {"question": question, "query": query}
        return Call("POST", examples_path(owner, namespace), returns(Example), body)

    @operation
    def list_examples(self, owner: str, namespace: str) -> Call[ExampleList]:
        return Call("GET", examples_path(owner, namespace), returns(ExampleList))

    @operation
    def delete_example(self, owner: str, namespace: str, example_id: str) -> Call[None]:
        return Call("DELETE", f"{examples_path(owner, namespace)}/{segment(example_id)}", None)

    @operation
    def mark_step(
        self, conversation_id: str, step: int, verdict: str, turn: int | None = None, question: str | None = None
    ) -> Call[Mark]:
        """Mark a conversation step's query `good` (stored as a verified example of the
        conversation's namespace) or `bad` (removed)."""
        body = without_none(conversationId=conversation_id, step=step, verdict=verdict, turn=turn, question=question)
        return Call("POST", f"{API}/examples/marks", returns(Mark), body)

    # A2A discovery (calling an agent is A2A's own client's job: see docs/a2a.md)

    @operation
    def list_agents(self) -> Call[list[Agent]]:
        return Call("GET", f"{API}/a2a", returns(list[Agent]))

    @operation
    def agent_card(self, agent: str) -> Call[dict[str, Any]]:
        return Call("GET", f"{API}/a2a/{segment(agent)}/.well-known/agent-card.json", returns(dict[str, Any]))
