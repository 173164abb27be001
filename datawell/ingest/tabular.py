"""Readers for tabular files: CSV/TSV, JSON array, JSON Lines, Parquet, XLSX.

Each reader names its columns up front and then streams rows in batches, so memory stays
flat however large the file is. `batches()` opens the file anew on every call: the first
ingestion of a dataset reads a file twice (once to infer types, once to write)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from datawell.errors import IngestionFailed
from datawell.ingest.formats import CSV_DELIMITERS, Format, head, sniff_encoding, undecodable
from datawell.ingest.limits import nested_too_deeply, too_deep

SAMPLE_RECORDS = 1000  # JSON records read to find the columns
JSON_DEPTH = 64  # DATAWELL_INGEST_MAX_JSON_DEPTH's default
MAX_ITEM_CHARS = 64 * 1024 * 1024  # one JSON item or CSV field may be this large
READ_CHARS = 1024 * 1024


@dataclass
class Batch:
    rows: list[list[Any]] = field(default_factory=list)  # values in the order of the table's columns
    locations: list[int] = field(default_factory=list)  # the line or row number of each row
    position: int = 0  # bytes of the file read so far (approximate inside a file)


class Table(Protocol):
    unit: str  # "line" or "row": how `Batch.locations` count
    columns: list[str]

    def batches(self, size: int) -> Iterator[Batch]: ...


def open_table(path: Path, fmt: Format, *, json_depth: int = JSON_DEPTH) -> Table:
    if fmt in ("csv", "tsv"):
        return CsvTable(path, "\t" if fmt == "tsv" else None)
    if fmt == "json":
        return JsonTable(path, max_depth=json_depth)
    if fmt == "jsonl":
        return JsonTable(path, lines=True, max_depth=json_depth)
    if fmt == "parquet":
        return ParquetTable(path)
    if fmt == "xlsx":
        return XlsxTable(path)
    raise ValueError(f"{fmt} is not a tabular format")


def column_names(raw: list[Any]) -> list[str]:
    """Header cells as column names: blanks get `column_N`, repeats get a `_2`, `_3` suffix."""
    names: list[str] = []
    for i, cell in enumerate(raw):
        base = str(cell).strip() if cell is not None and str(cell).strip() else f"column_{i + 1}"
        name, n = base, 2
        while name in names:
            name, n = f"{base}_{n}", n + 1
        names.append(name)
    return names


def sample_rows(table: Table, count: int) -> list[list[Any]]:
    for batch in table.batches(count):
        return batch.rows
    return []


class CsvTable:
    """Delimited text. The first non-blank line is the header; every record must have as
    many fields as the header."""

    unit = "line"

    def __init__(self, path: Path, delimiter: str | None = None) -> None:
        self.path = path
        self.encoding = sniff_encoding(path)
        self.delimiter = delimiter or self._sniff_delimiter()
        self.columns = column_names(self._header())

    def _sniff_delimiter(self) -> str:
        sample = head(self.path).decode(self.encoding, errors="ignore")
        sample = sample[: sample.rfind("\n")] if "\n" in sample else sample
        try:
            return csv.Sniffer().sniff(sample, delimiters=CSV_DELIMITERS).delimiter
        except csv.Error:
            return ","

    def _open(self, raw: BinaryIO) -> Any:
        csv.field_size_limit(MAX_ITEM_CHARS)
        text = io.TextIOWrapper(raw, encoding=self.encoding, newline="")
        return csv.reader(text, delimiter=self.delimiter, strict=True)

    def _header(self) -> list[str]:
        with self.path.open("rb") as raw:
            reader = self._open(raw)
            try:
                for record in reader:
                    if any(cell.strip() for cell in record):
                        return record
            except csv.Error as exc:
                raise IngestionFailed(f"line {reader.line_num}: {exc}") from None
            except UnicodeDecodeError:
                raise undecodable(self.encoding, f"line {reader.line_num + 1}") from None
        raise IngestionFailed("the file is empty: expected a header line naming the columns")

    def batches(self, size: int) -> Iterator[Batch]:
        width = len(self.columns)
        with self.path.open("rb") as raw:
            reader = self._open(raw)
            batch, seen_header, last_line = Batch(), False, 0
            try:
                for record in reader:
                    start, last_line = last_line + 1, reader.line_num
                    if not seen_header:
                        seen_header = any(cell.strip() for cell in record)
                        continue
                    if not record:
                        continue  # a blank line
                    if len(record) != width:
                        raise IngestionFailed(
                            f"line {start}: expected {width} fields as in the header, found {len(record)} "
                            f"(separator {self.delimiter!r}; a field containing it must be quoted)"
                        )
                    batch.rows.append(record)
                    batch.locations.append(start)
                    if len(batch.rows) >= size:
                        batch.position = raw.tell()
                        yield batch
                        batch = Batch()
            except csv.Error as exc:
                raise IngestionFailed(
                    f"line {last_line + 1}: {exc} (check the quotes of the record starting on this line)"
                ) from None
            except UnicodeDecodeError:
                raise undecodable(self.encoding, f"line {last_line + 1}") from None
            batch.position = raw.tell()
            if batch.rows:
                yield batch


class JsonTable:
    """A JSON array of objects, or JSON Lines (one object per line). The columns are the keys
    of the first records, in the order they first appear."""

    unit = "line"

    def __init__(self, path: Path, *, lines: bool = False, max_depth: int = JSON_DEPTH) -> None:
        self.path = path
        self.encoding = sniff_encoding(path)
        self.max_depth = max_depth
        self.mode = "lines" if lines else self._mode()
        keys: dict[str, None] = {}
        for n, (_line, record, _position) in enumerate(self.records()):
            keys.update(dict.fromkeys(record))
            if n + 1 >= SAMPLE_RECORDS:
                break
        self.columns = list(keys)
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
        batch = Batch()
        position = 0
        for line, record, position in self.records():
            batch.rows.append([record.get(c) for c in columns])
            batch.locations.append(line)
            if len(batch.rows) >= size:
                batch.position = position
                yield batch
                batch = Batch()
        batch.position = position
        if batch.rows:
            yield batch


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
    """The workbook's active sheet. The first non-empty row is the header; cells right of
    the last named column are ignored; empty rows are skipped."""

    unit = "row"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sheet_rows = 0
        header: list[Any] | None = None
        for _number, cells in self._rows():
            header = cells
            break
        if header is None:
            raise IngestionFailed("the spreadsheet's first sheet is empty: expected a header row naming the columns")
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
        next(rows, None)  # the header
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
