"""What every client command shares: the server and token options, and turning the
client's errors into one line and exit code 1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import httpx
import typer

from datawell.client import ApiError, Client
from datawell.config import Settings

ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server", help="The Datawell server (default DATAWELL_SERVER, else where `datawell serve` listens here)."
    ),
]
TokenOption = Annotated[
    str | None, typer.Option("--token", help="Bearer token (default DATAWELL_TOKEN).", show_default=False)
]
TOKEN_HINT = "get one with `datawell token issue USER` and pass it with --token or DATAWELL_TOKEN"


def fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


@contextmanager
def connect(server: str | None, token: str | None) -> Iterator[Client]:
    """A client for the command; any error it meets ends the command with one line."""
    settings = Settings()
    url = server or settings.server_url
    secret = token or (settings.token.get_secret_value() if settings.token else None)
    if not secret:
        raise fail(f"no token: {TOKEN_HINT}")
    try:
        with Client(url, secret) as client:
            yield client
    except ApiError as exc:
        hint = f" ({TOKEN_HINT})" if exc.status == 401 else ""
        raise fail(f"{exc}{hint}") from None
    except httpx.ConnectError:
        raise fail(
            f"no Datawell server answers at {url}: start one with `datawell serve` (or scripts/serve.sh), "
            "or name it with --server URL or DATAWELL_SERVER"
        ) from None
    except httpx.TransportError as exc:
        raise fail(f"the connection to {url} failed: {exc}") from None


def dataset_address(value: str) -> tuple[str, str, str]:
    """OWNER/NAMESPACE/DATASET."""
    parts = value.split("/")
    if len(parts) != 3 or not all(parts):
        raise typer.BadParameter("give the dataset as OWNER/NAMESPACE/DATASET")
    return parts[0], parts[1], parts[2]


def namespace_address(value: str) -> tuple[str, str]:
    """OWNER/NAMESPACE."""
    owner, sep, name = value.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise typer.BadParameter("give the namespace as OWNER/NAMESPACE")
    return owner, name
