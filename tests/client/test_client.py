"""`datawell.client` against a real server process: typed results, ErrorResponse as ApiError,
a multipart upload in parallel parts with progress, the assistant's events as a stream."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from datawell.client import ApiError, AsyncClient, Client, UploadProgress
from datawell.client.calls import Call, operation
from datawell.client.models import DatasetCoordinate
from datawell.client.operations import Operations
from tests.client.conftest import Live

PART = 8 * 1024 * 1024
PROTOCOLS = {
    ("post", "/api/v1/a2a/{agent}"),
    ("post", "/api/v1/mcp"),
    # The DataLinks SDK's spelling of DELETE /data/{username}/{namespace}/{datasetName}: the SDK is its client.
    ("delete", "/api/v1/data/{username}/{namespace}/{datasetName}/balefire"),
}
ORDERS = "order_id,customer,total\n1,alice,120\n2,bob,80\n3,alice,40\n"


def test_upload_waits_for_the_ingestion_and_reports_progress(live: Live, tmp_path: Path) -> None:
    file = tmp_path / "orders.csv"
    file.write_text(ORDERS)
    seen: list[UploadProgress] = []
    with Client(live.url, live.token) as client:
        created = client.create_dataset("shop", "orders", {"order_id": "Order", "customer": "Who", "total": "EUR"})
        attempt = client.upload(file, "demo", "shop", "orders", progress=seen.append)
        dataset = client.get_dataset("demo", "shop", "orders")
        listed = client.list_attempts("demo", "shop", "orders", page_size=5)
    assert (created.owner, created.dataset_name) == ("demo", "orders")
    assert (attempt.status, attempt.processed_rows, attempt.attributes.name) == ("SUCCEEDED", 3, "orders.csv")
    assert seen[0].phase == "parts" and (seen[0].parts_done, seen[0].sent_bytes) == (1, len(ORDERS))
    assert seen[-1].phase == "ingestion" and seen[-1].attempt == attempt
    assert dataset.field_types["total"] == "integer"
    assert [a.id for a in listed.data] == [attempt.id]


def test_cancel_of_a_finished_attempt_is_a_conflict(live: Live, tmp_path: Path) -> None:
    file = tmp_path / "few.csv"
    file.write_text(ORDERS)
    with Client(live.url, live.token) as client:
        client.create_dataset("shop", "few", {"order_id": "Order", "customer": "Who", "total": "EUR"})
        attempt = client.upload(file, "demo", "shop", "few")
        with pytest.raises(ApiError) as finished:
            client.cancel(attempt.id)
    assert attempt.status == "SUCCEEDED"
    assert (finished.value.status, finished.value.error_code) == (409, "CONFLICT")


async def test_a_three_part_upload_in_parallel(live: Live, tmp_path: Path) -> None:
    """More than two 8 MiB parts, sent concurrently; the service assembles them in order
    (the file is not valid JSON, so its ingestion fails, quickly and with a message)."""
    file = tmp_path / "big.json"
    body = b"[" + b"0," * PART + b"oops"
    file.write_bytes(body)
    seen: list[UploadProgress] = []
    async with AsyncClient(live.url, live.token) as client:
        await client.create_dataset("shop", "big", {"value": "A number"})
        attempt = await client.upload(file, "demo", "shop", "big", progress=seen.append, concurrency=3)
    parts = [p for p in seen if p.phase == "parts"]
    assert [p.parts_done for p in parts] == [1, 2, 3]
    assert parts[-1].sent_bytes == parts[-1].total_bytes == len(body) == attempt.expected_total_bytes
    assert attempt.status == "FAILED" and attempt.status_message


def test_error_responses_are_raised_as_one_exception(live: Live) -> None:
    with Client(live.url, live.token) as client:
        with pytest.raises(ApiError) as missing:
            client.get_dataset("demo", "shop", "nothing")
        with pytest.raises(ApiError) as invalid:
            client.create_dataset("shop", "described", {"a": "b"}, description="x" * 10001)
    assert (missing.value.status, missing.value.error_code) == (404, "NOT_FOUND")
    assert (invalid.value.status, invalid.value.error_code) == (422, "VALIDATION_ERROR")
    assert invalid.value.sub_errors and "dataDescription" in invalid.value.sub_errors[0].message
    with Client(live.url, "not-a-token") as client, pytest.raises(ApiError) as refused:
        client.list_build_specs()
    assert (refused.value.status, refused.value.error_code) == (401, "UNAUTHORIZED")


async def test_ask_streams_the_assistant_events(live: Live) -> None:
    with Client(live.url, live.token) as client:
        names = [event.event for event in client.ask("shop", "Who orders most?")]
        answer = client.autorag("shop", "Who orders most?")
    assert names[0] == "run-started" and names[-2:] == ["answer", "run-finished"]
    assert "plan" in names and "step" in names
    assert answer.response and answer.conversation_id
    async with AsyncClient(live.url, live.token) as client:
        events = [event async for event in client.ask("shop", "And then?", conversation_id=answer.conversation_id)]
        with pytest.raises(ApiError) as forbidden:
            [event async for event in client.ask("shop", "?", username="nobody")]
    assert events[-1].data["conversationId"] == answer.conversation_id
    assert forbidden.value.status == 404


def test_build_specs_links_and_agents(live: Live) -> None:
    with Client(live.url, live.token) as client:
        client.create_dataset("shop", "customers", {"name": "Customer name"})
        coordinate = DatasetCoordinate(owner="demo", namespace="shop", dataset_name="customers")
        spec = client.create_build_spec([coordinate], coordinate, "print(1)")
        replaced = client.replace_build_spec(spec.id, [coordinate], coordinate, "print(2)", if_match=spec.version)
        with pytest.raises(ApiError) as stale:
            client.replace_build_spec(spec.id, [coordinate], coordinate, "print(3)", if_match=spec.version)
        client.delete_build_spec(spec.id)
        links = client.list_links("shop")
        agents = client.list_agents()
        card = client.agent_card(agents[0].name)
    assert (replaced.version, replaced.code.payload, stale.value.status) == (spec.version + 1, "print(2)", 409)
    assert links.data == []
    assert card["supportedInterfaces"][0]["url"] == agents[0].url == f"{live.url}/api/v1/a2a/{agents[0].name}"


def sample(parameter: inspect.Parameter) -> Any:
    samples: dict[str, Any] = {
        "str": "x",
        "int": 1,
        "bytes": b"",
        "dict[str, str]": {},
        "list[DatasetCoordinate]": [],
        "list[CompletedPart] | None": [],
        "DatasetCoordinate": DatasetCoordinate(owner="o", namespace="n", dataset_name="d"),
        "datetime | None": datetime.now(UTC),
        "int | None": 1,
        "bool": True,
    }
    if parameter.name == "url":  # a presigned part URL of the local object store
        return "/api/v1/upload/parts"
    return samples.get(str(parameter.annotation), "x")


def test_every_rest_operation_has_a_client_method(live: Live) -> None:
    """Each operation of the OpenAPI document is built by some client method (the A2A and
    MCP JSON-RPC endpoints are their protocols' own clients' job, and the operations tagged
    `datalinks` the DataLinks SDK's: tests/datalinks drives them with it)."""
    with Client(live.url) as client:
        document = client.openapi()
    built: list[tuple[str, str]] = []
    for member in vars(Operations).values():
        if isinstance(member, operation):
            parameters = list(inspect.signature(member.build).parameters.values())[1:]
            named = [p for p in parameters if p.kind == p.POSITIONAL_OR_KEYWORD]
            for chosen in ([p for p in named if p.default is p.empty], named):  # with and without the optional ones
                call: Call[Any] = member.build(None, **{p.name: sample(p) for p in chosen})
                built.append((call.method, call.path))
    missing = []
    for path, methods in document["paths"].items():
        pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$")
        for method, spec in methods.items():
            if (method, path) in PROTOCOLS or "datalinks" in spec.get("tags", []):
                continue
            if not any(m == method.upper() and pattern.match(p) for m, p in built):
                missing.append(f"{method.upper()} {path}")
    assert missing == []


def test_the_client_imports_nothing_of_the_server() -> None:
    probe = "import sys, datawell.client; print(sorted(m for m in sys.modules if m.startswith('datawell')))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert eval(loaded) == sorted(
        ["datawell", "datawell.client"]
        + [f"datawell.client.{m}" for m in ("aio", "calls", "errors", "models", "operations", "run_records", "streams", "sync")]
    )
