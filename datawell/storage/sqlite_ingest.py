"""A child process that appends Arrow batches to SQLite tables with the ADBC SQLite driver.

The driver bundles its own copy of SQLite; two copies in one process break each other's
file locks, so it runs here, in a process of its own, fed by `bulk.SqliteProcessWriter`:
each batch of field values arrives on stdin as one Arrow IPC stream whose schema metadata
names the staging table and what `bulk.staged` needs to add the rows' ids (made here: off
the parent's core); it is acknowledged with a line on stdout once committed. It says `ready`
once started, and serves stages until its input ends (`bulk.WriterProcess`).

    python -m datawell.storage.sqlite_ingest /path/to/rows.db"""

from __future__ import annotations

import io
import sys
from typing import cast

import adbc_driver_manager as adbc
import adbc_driver_sqlite
import pyarrow as pa
import pyarrow.ipc as ipc

from datawell.storage.bulk import Stage, append, execute, return_freed_arrow_memory, staged


def main(path: str) -> None:
    return_freed_arrow_memory()
    with adbc_driver_sqlite.connect(path) as database, adbc.AdbcConnection(database) as connection:
        execute(connection, "PRAGMA busy_timeout=30000")  # autocommit: pragmas cannot change in a transaction
        # A staging table needs no durability before it is published (publishing commits
        # durably; a crash before that starts the attempt from an empty stage).
        execute(connection, "PRAGMA synchronous=NORMAL")
        # Its commits leave the rows in the write-ahead log: copying a batch's pages into the
        # database (and syncing it) at every commit past 1,000 pages took 0.03-0.2 s of a
        # 100,000-row stage. The publish commit syncs the log; the worker copies it after the
        # attempt (`RowStore.checkpoint_soon`). The log is cut back to 64 MiB when it restarts.
        execute(connection, "PRAGMA wal_autocheckpoint=0")
        execute(connection, f"PRAGMA journal_size_limit={64 * 1024 * 1024}")
        sys.stdout.write("ready\n")  # started: the parent may count on it for the next stage
        sys.stdout.flush()
        source = cast(io.BufferedReader, sys.stdin.buffer)
        while source.peek(1):
            reader = ipc.open_stream(source)
            meta = {key.decode(): value.decode() for key, value in (reader.schema.metadata or {}).items()}
            stage = Stage(meta["table"], meta["prefix"], "sqlite")
            data = pa.Table.from_batches([staged(batch, stage, int(meta["first"])) for batch in reader])
            execute(connection, "BEGIN")
            append(connection, stage.table, data)
            execute(connection, "COMMIT")
            sys.stdout.write("ok\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
