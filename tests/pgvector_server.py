"""A PostgreSQL server with pgvector for the tests of `storage/pgvector.py`, and a fresh
database on a server for each test that asks (`conftest.database_url`).

DATAWELL_TEST_PGVECTOR_URL names one (`postgresql+asyncpg://…`), or is `pgserver`: then a
throwaway cluster is started from the binaries of the `pgserver` wheel (PostgreSQL 16 with
pgvector; a dev dependency), because Debian 12, whose PostgreSQL `.ci/run` installs, has no
pgvector package. Unset: the pgvector tests are skipped."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest

SETTING = os.environ.get("DATAWELL_TEST_PGVECTOR_URL")
# conftest's `database_url` with a third database, PostgreSQL with pgvector (the vectors then go
# beside the rows): `pytest.mark.parametrize("database_url", WITH_PGVECTOR, indirect=True)`.
WITH_PGVECTOR = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.postgres),
    pytest.param("pgvector", marks=pytest.mark.postgres),
]


def _as_postgres(command: list[str]) -> list[str]:
    """initdb refuses to run as root: CI runs as root, and PostgreSQL as `postgres` (as `.ci/run`)."""
    return ["runuser", "-u", "postgres", "--", *command] if os.getuid() == 0 else command


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def pgserver_cluster(settings: dict[str, str] | None = None) -> Iterator[str]:
    """A cluster of the pgserver wheel's PostgreSQL in a temporary folder, on a free port, with
    server `settings` beside the defaults (e.g. `{"shared_buffers": "6GB"}`)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        pytest.skip("DATAWELL_TEST_PGVECTOR_URL=pgserver, but the pgserver package is not installed")
    folder = Path(tempfile.mkdtemp(prefix="datawell-pgvector-"))
    # A copy the postgres user can read and run, wherever the virtual environment lives; the
    # binaries find their libraries in the wheel's `pgserver.libs` beside the package (RPATH).
    package = Path(spec.origin).parent
    shutil.copytree(package / "pginstall", folder / "pgserver" / "pginstall")
    shutil.copytree(package.with_name("pgserver.libs"), folder / "pgserver.libs")
    bin_dir, data, port = folder / "pgserver" / "pginstall" / "bin", folder / "data", _free_port()
    ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w"]
    try:
        if os.getuid() == 0:
            subprocess.run(["chown", "-R", "postgres", str(folder)], check=True)
            folder.chmod(0o755)
        initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
        _run(_as_postgres(initdb))
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50"
        options += "".join(f" -c {name}={value}" for name, value in (settings or {}).items())
        _run(_as_postgres([*ctl, "-o", options, "start"]))
        yield f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres([*ctl, "-m", "immediate", "stop"]), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")


@contextmanager
def pgvector_server() -> Iterator[str]:
    if not SETTING:
        pytest.skip("DATAWELL_TEST_PGVECTOR_URL is not set")
    if SETTING == "pgserver":
        with pgserver_cluster() as url:
            yield url
    else:
        yield SETTING


@asynccontextmanager
async def fresh_database(server: str) -> AsyncIterator[str]:
    """A new database on `server` (a URL), dropped after with the query roles made for it."""
    import asyncpg

    from datawell.tools.sandbox.postgres import drop_roles

    admin_dsn = server.replace("postgresql+asyncpg://", "postgresql://")
    name = f"dw_test_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(admin_dsn)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server.rsplit("/", 1)[0] + f"/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await drop_roles(admin, name)  # query roles are cluster-wide
        await admin.close()
