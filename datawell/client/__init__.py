"""The Python client of Datawell's REST API (httpx), sync and async, standing alone: it
imports nothing of the server.

    from datawell.client import Client

    with Client("http://127.0.0.1:8000", token=TOKEN) as client:
        client.create_dataset("shop", "orders", {"order_id": "Order number"})
        attempt = client.upload("orders.csv", "demo", "shop", "orders")
        for event in client.ask("shop", "How many orders?"):
            print(event.event, event.data)

Every error answer is raised as `ApiError` (`status`, `error_code`, `message`,
`sub_errors`)."""

from datawell.client.aio import AsyncClient
from datawell.client.errors import ApiError, SubError
from datawell.client.models import IngestionAttempt, RunEvent, UploadProgress
from datawell.client.sync import Client

__all__ = ["ApiError", "AsyncClient", "Client", "IngestionAttempt", "RunEvent", "SubError", "UploadProgress"]
