"""Readers for tabular files: CSV/TSV, JSON array, JSON Lines, Parquet, XLSX.

Each reader names its columns up front and then streams rows in batches, so memory stays
flat however large the file is. `batches()` opens the file anew on every call. CSV/TSV
live in `delimited`, what the readers share in `batches`; the ingestion reads them the columnar way when it can (`columnar`)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from datawell.errors import IngestionFailed
from datawell.ingest.batches import DEFAULT_LIMITS, Batch, Limits, Table, column_names
from datawell.ingest.delimited import CsvTable
from datawell.ingest.formats import Format, head, sniff_encoding, undecodable
from datawell.ingest.limits import nested_too_deeply, too_deep

SAMPLE_RECORDS = 1000  # JSON records read to find the columns
MAX_ITEM_CHARS = 64 * 1024 * 1024  # one JSON item may be this large
READ_CHARS = 1024 * 1024


def open_table(path: Path, fmt: Format, limits: Limits = DEFAULT_LIMITS) -> Table:
    table = _open_table(path, fmt, limits)
    if len(table.columns) > limits.columns:
        raise IngestionFailed(
            f"the file has {len(table.columns):,} columns, more than the {limits.columns:,} a file may have "
            "(setting DATAWELL_INGEST_MAX_COLUMNS)"
        )
    return table


def _open_table(path: Path, fmt: Format, limits: Limits) -> Table:
    if fmt in ("csv", "tsv"):
        return CsvTable(path, "\t" if fmt == "tsv" else None, limits)
    if fmt == "json":
        return JsonTable(path, max_depth=limits.json_depth)
    if fmt == "jsonl":
        return JsonTable(path, lines=True, max_depth=limits.json_depth)
    if fmt == "parquet":
        return ParquetTable(path)
    if fmt == "xlsx":
        return XlsxTable(path)
    raise ValueError(f"{fmt} is not a tabular format")


class JsonTable:
    """A JSON array of objects, or JSON Lines (one object per line). The columns are the keys
    of the first records, in the order they first appear; a key holding an object also gives
    a column per key inside it, named with a dot (`address.city`), so nested records can be
    mapped field by field (the object itself stays a column, as JSON text)."""

    unit = "line"

    def __init__(self, path: Path, *, lines: bool = False, max_depth: int = DEFAULT_LIMITS.json_depth) -> None:
        self.path = path
        self.encoding = sniff_encoding(path)
        self.max_depth = max_depth
        self.mode = "lines" if lines else self._mode()
        keys: dict[str, None] = {}
        inner: dict[str, None] = {}
        for n, (_line, record, _position) in enumerate(self.records()):
            keys.update(dict.fromkeys(record))
            inner.update(dict.fromkeys(nested_keys(record)))
            if n + 1 >= SAMPLE_RECORDS:
                break
        self.nested = [key for key in inner if key not in keys]
        self.columns = list(keys) + self.nested
        if not self.columns:
            raise IngestionFailed("the file holds no JSON objects with fields")

    def _mode(self) -> str:
        """`array`, `lines`, or `document`: one (pretty-printed) object, small enough to read whole."""
        text = head(self.path).decode(self.encoding, errors="ignore").lstrip("\ufeff \t\r\n")
        if not text:
            raise IngestionFailed("the file is empty")
        if text[0] == "[":
            return "array"
        if text[0] != "{":
            raise IngestionFailed("line 1: a JSON file must hold an array of objects or one object per line")
        try:
            json.loads(text.splitlines()[0])
            return "lines"
        except RecursionError:
            raise nested_too_deeply("line 1", self.max_depth) from None
        except json.JSONDecodeError:
            if self.path.stat().st_size > MAX_ITEM_CHARS:
                raise IngestionFailed(
                    "a JSON file this large must be an array of objects or JSON Lines (one object per line)"
                ) from None
            return "document"

    def records(self) -> Iterator[tuple[int, dict[str, Any], int]]:
        """(line, object, bytes read) for every record."""
        with self.path.open("rb") as raw:
            text = io.TextIOWrapper(raw, encoding=self.encoding)
            readers = {"array": json_array, "lines": json_lines, "document": json_document}
            line = 0
            try:
                for line, item in readers[self.mode](text):
                    if not isinstance(item, dict):
                        raise IngestionFailed(f"line {line}: expected a JSON object, found {type(item).__name__}")
                    if too_deep(item, self.max_depth):
                        raise nested_too_deeply(f"line {line}", self.max_depth)
                    yield line, item, raw.tell()
            except UnicodeDecodeError:
                raise undecodable(self.encoding, "the file") from None
            except RecursionError:  # deeper than Python's parser goes: far past any limit
                where = f"the record after line {line}" if line else "the first record"
                raise nested_too_deeply(where, self.max_depth) from None

    def batches(self, size: int) -> Iterator[Batch]:
        columns = self.columns
        paths = [(c, c.split(".") if c in self.nested else None) for c in columns]
        batch = Batch()
        position = 0
        for line, record, position in self.records():
            batch.rows.append([record.get(c) if path is None else dig(record, path) for c, path in paths])
            batch.locations.append(line)
            if len(batch.rows) >= size:
                batch.position = position
                yield batch
                batch = Batch()
        batch.position = position
        if batch.rows:
            yield batch


def nested_keys(value: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """`address.city` for `{"address": {"city": ...}}`, at every depth (not the top keys)."""
    for key, item in value.items():
        name = f"{prefix}{key}"
        if prefix:
            yield name
        if isinstance(item, dict):
            yield from nested_keys(item, f"{name}.")


def dig(record: dict[str, Any], path: list[str]) -> Any:
    value: Any = record
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def json_document(text: io.TextIOBase) -> Iterator[tuple[int, Any]]:
    """One object: its records when it wraps a single array of objects (`{"data": [...]}`),
    else the object itself as one record."""
    try:
        document = json.loads(text.read())
    except json.JSONDecodeError as exc:
        raise IngestionFailed(f"line {exc.lineno}: not valid JSON ({exc.msg})") from None
    arrays = [v for v in document.values() if isinstance(v, list) and v and all(isinstance(i, dict) for i in v)]
    if len(arrays) == 1 and len(document) == 1:
        yield from ((1, item) for item in arrays[0])
    else:
        yield 1, document


def json_lines(text: io.TextIOBase) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(text, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestionFailed(f"line {number}: not valid JSON ({exc.msg} at column {exc.colno})") from None


def json_array(text: io.TextIOBase) -> Iterator[tuple[int, Any]]:
    """The items of a top-level JSON array, one at a time, with the line each starts on."""
    decoder = json.JSONDecoder()
    buffer, pos, line, eof = "", 0, 1, False

    def more() -> bool:
        nonlocal buffer, pos, eof
        if eof:
            return False
        chunk = text.read(READ_CHARS)
        eof = not chunk
        buffer, pos = buffer[pos:] + chunk, 0
        return bool(chunk)

    def skip_space() -> str:
        """The next significant character ('' at the end of the file)."""
        nonlocal pos, line
        while True:
            while pos < len(buffer) and buffer[pos] in " \t\r\n\ufeff":
                line += buffer[pos] == "\n"
                pos += 1
            if pos < len(buffer):
                return buffer[pos]
            if not more():
                return ""

    def fail(message: str) -> IngestionFailed:
        return IngestionFailed(f"line {line}: {message}")

    if skip_space() != "[":
        raise fail("expected a JSON array of objects, starting with '['")
    pos += 1
    if skip_space() == "]":
        return
    while True:
        if skip_space() == "":
            raise fail("the file ends inside the array (is it truncated?)")
        while True:
            try:
                item, end = decoder.raw_decode(buffer, pos)
                break
            except json.JSONDecodeError as exc:
                # An item cut by the read window: read on, up to a bound on one item's size.
                if len(buffer) - pos < MAX_ITEM_CHARS and more():
                    continue
                at = line + buffer.count("\n", pos, exc.pos)
                raise IngestionFailed(f"line {at}: not valid JSON ({exc.msg})") from None
        yield line, item
        line += buffer.count("\n", pos, end)
        pos = end
        separator = skip_space()
        if separator == "]":
            pos += 1
            if skip_space() != "":
                raise fail("unexpected content after the end of the array")
            return
        if separator != ",":
            raise fail("expected ',' or ']' after an item")
        pos += 1


class ParquetTable:
    unit = "row"

    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        self.path = path
        try:
            schema = pq.read_schema(path)
        except Exception as exc:  # pyarrow raises several types for a file it cannot read
            raise IngestionFailed(f"the file is not a readable Parquet file ({exc})") from None
        self.columns = column_names(schema.names)

    def batches(self, size: int) -> Iterator[Batch]:
        import pyarrow.parquet as pq

        file = pq.ParquetFile(self.path)
        total_rows = max(file.metadata.num_rows, 1)
        total_bytes = self.path.stat().st_size
        done = 0
        for record_batch in file.iter_batches(batch_size=size):
            columns = [record_batch.column(i).to_pylist() for i in range(record_batch.num_columns)]
            rows = [list(values) for values in zip(*columns, strict=True)]
            locations = list(range(done + 1, done + len(rows) + 1))
            done += len(rows)
            yield Batch(rows, locations, total_bytes * done // total_rows)


class XlsxTable:
    """The workbook's active sheet. The header is the first non-empty row, after any title
    rows above it (a row with one cell filled, above a fuller one); a header split over two
    rows (a group name merged over the columns below it, as in `Q1` over `Units | Revenue`)
    gives `Q1 Units`, `Q1 Revenue`. Cells right of the last named column are ignored; empty
    rows are skipped."""

    unit = "row"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sheet_rows = 0
        head: list[list[Any]] = []
        for _number, cells in self._rows():
            head.append(cells)
            if len(head) >= HEADER_SCAN_ROWS:
                break
        if not head:
            raise IngestionFailed("the spreadsheet's first sheet is empty: expected a header row naming the columns")
        self.header_rows, header = header_of(head)
        while header and (header[-1] is None or not str(header[-1]).strip()):
            header.pop()
        self.columns = column_names(header)

    def _rows(self) -> Iterator[tuple[int, list[Any]]]:
        import openpyxl

        try:
            workbook = openpyxl.load_workbook(self.path, read_only=True, data_only=True)
        except Exception as exc:  # zipfile, XML and openpyxl errors alike
            raise IngestionFailed(f"the file is not a readable XLSX workbook ({exc})") from None
        try:
            sheet = workbook.active or workbook.worksheets[0]
            self.sheet_rows = sheet.max_row or 0  # from the sheet's stored dimension; may be missing
            for number, cells in enumerate(sheet.iter_rows(values_only=True), start=1):
                if any(c is not None and str(c).strip() for c in cells):
                    yield number, list(cells)
        finally:
            workbook.close()

    def batches(self, size: int) -> Iterator[Batch]:
        width = len(self.columns)
        total_bytes = self.path.stat().st_size
        rows = self._rows()
        for _ in range(self.header_rows):
            next(rows, None)
        batch = Batch()
        for number, cells in rows:
            batch.rows.append((cells + [None] * width)[:width])
            batch.locations.append(number)
            if len(batch.rows) >= size:
                batch.position = total_bytes * number // self.sheet_rows if self.sheet_rows else 0
                yield batch
                batch = Batch()
        batch.position = total_bytes
        if batch.rows:
            yield batch


HEADER_SCAN_ROWS = 6  # rows looked at for titles and a two-row header


def _filled(cells: list[Any]) -> list[int]:
    return [i for i, c in enumerate(cells) if c is not None and str(c).strip()]


def header_of(rows: list[list[Any]]) -> tuple[int, list[Any]]:
    """(how many rows the header takes, including titles above it; the column names)."""
    skip = 0
    while skip + 1 < len(rows) and len(_filled(rows[skip])) == 1 and len(_filled(rows[skip + 1])) >= 2:
        skip += 1  # a title
    upper = rows[skip]
    lower = rows[skip + 1] if skip + 1 < len(rows) else []
    gaps = [i for i in _filled(lower) if i not in _filled(upper)]
    words = all(isinstance(lower[i], str) for i in _filled(lower))
    if not gaps or not words or (skip + 2 >= len(rows) + 1 and not lower):
        return skip + 1, list(upper)
    names: list[Any] = []
    group: Any = None
    for i in range(max(len(upper), len(lower))):
        top = upper[i] if i < len(upper) and i in _filled(upper) else None
        bottom = lower[i] if i < len(lower) and i in _filled(lower) else None
        if top is not None:
            group = top
        parent = top if top is not None else group
        names.append(" ".join(str(p).strip() for p in (parent, bottom) if p is not None) or None)
    return skip + 2, names
