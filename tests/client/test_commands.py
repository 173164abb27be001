"""The client commands as a user runs them beside a server: `datawell upload` (progress,
row count, a failed ingestion's exit code and message), `datasets`, `attempts`, `retry`,
`clear` and `ask`."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner, Result

from datawell.cli import app
from tests.client.conftest import Live


def datawell(live: Live, *args: str, token: bool = True, stdin: str | None = None) -> Result:
    env = dict(live.env) if token else {k: v for k, v in live.env.items() if k != "DATAWELL_TOKEN"}
    return CliRunner().invoke(app, list(args), env=env, input=stdin)


def test_upload_creates_the_dataset_and_ends_with_the_row_count(live: Live, tmp_path: Path) -> None:
    file = tmp_path / "orders.csv"
    file.write_text("order_id,customer,total\n1,alice,120\n2,bob,80\n")
    result = datawell(live, "upload", str(file), "demo/shop/orders", "--create", "--schema", "total=Amount in EUR")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("demo/shop/orders: 2 rows from orders.csv (ingestion ")
    assert "created demo/shop/orders with fields total" in result.stderr
    assert "parts" in result.stderr and "ingestion" in result.stderr  # the two bars

    headers = tmp_path / "customers.csv"
    headers.write_text("name,city\nAnn,Oslo\n")
    inferred = datawell(live, "upload", str(headers), "demo/shop/customers", "--create")
    assert inferred.exit_code == 0, inferred.output
    assert "with fields name, city" in inferred.stderr

    listed = datawell(live, "datasets", "demo/shop")
    assert listed.stdout.split("\n")[0].split() == ["dataset", "fields", "description"]
    assert {line.split()[0] for line in listed.stdout.splitlines()[1:]} == {"orders", "customers"}


def test_a_failed_ingestion_exits_1_with_its_message_and_can_be_retried(live: Live, tmp_path: Path) -> None:
    file = tmp_path / "broken.json"
    file.write_text('[{"a": 1}, {"a": ')
    result = datawell(live, "upload", str(file), "demo/shop/broken", "--create", "--schema", "a=A number")
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ingestion ") and " of broken.json FAILED: " in last
    ingestion_id = last.split()[2]

    attempts = datawell(live, "attempts", "demo/shop/broken")
    assert attempts.stdout.splitlines()[1].split()[:3] == [ingestion_id, "FAILED", "0"]
    retried = datawell(live, "retry", ingestion_id)
    assert retried.exit_code == 0 and retried.stdout.startswith("queued ingestion ")
    assert datawell(live, "retry", "not-an-id").stderr.startswith("error: invalid ingestion id")


def test_clear_asks_first(live: Live, tmp_path: Path) -> None:
    file = tmp_path / "rows.csv"
    file.write_text("x\n1\n2\n")
    assert datawell(live, "upload", str(file), "demo/lab/rows", "--create").exit_code == 0
    declined = datawell(live, "clear", "demo/lab/rows", stdin="n\n")
    assert declined.exit_code == 1 and "Aborted" in declined.output
    cleared = datawell(live, "clear", "demo/lab/rows", "--yes")
    assert cleared.stdout.startswith("cleared demo/lab/rows: 2 rows")


def test_ask_streams_plan_steps_and_answer(live: Live) -> None:
    result = datawell(live, "ask", "--namespace", "shop", "Who orders most?")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "plan:" and lines[1].startswith("  1. ")
    assert any(line.startswith("step 1: SELECT") for line in lines)
    assert lines[-1].startswith("A: ")
    assert "--conversation" in result.stderr


def test_errors_are_one_line_with_what_to_do(live: Live, tmp_path: Path) -> None:
    no_token = datawell(live, "datasets", "demo/shop", token=False)
    assert (no_token.exit_code, no_token.stderr) == (
        1,
        "error: no token: get one with `datawell token issue USER` and pass it with --token or DATAWELL_TOKEN\n",
    )
    bad_token = datawell(live, "datasets", "demo/shop", "--token", "nonsense")
    assert bad_token.stderr.startswith("error: the bearer token is not a valid JWT (get one with")
    forbidden = datawell(live, "attempts", "someone/else/data")
    assert forbidden.exit_code == 1 and forbidden.stderr.count("\n") == 1
    nowhere = datawell(live, "datasets", "demo/shop", "--server", "http://127.0.0.1:9")
    assert nowhere.stderr == (
        "error: no Datawell server answers at http://127.0.0.1:9: start one with `datawell serve` "
        "(or scripts/serve.sh), or name it with --server URL or DATAWELL_SERVER\n"
    )
    wrong = datawell(live, "upload", str(tmp_path), "demo/shop")
    assert wrong.exit_code == 2


def test_demo_goes_through_the_running_server(live: Live) -> None:
    result = datawell(live, "demo", "Who spent most?", "--user", "shopkeeper")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:2] == ["shopkeeper/shop/customers: SUCCEEDED, 12 rows", "shopkeeper/shop/orders: SUCCEEDED, 60 rows"]
    assert "Q: Who spent most?" in lines and lines[-1].startswith("A: ")
    again = datawell(live, "demo", "--user", "shopkeeper")
    assert again.stdout.splitlines()[0] == "shopkeeper/shop/customers: already loaded"
