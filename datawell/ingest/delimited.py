"""Delimited text (CSV/TSV) read row by row with `csv`: the reader that names the line of
anything wrong, and the one the columnar path (`columnar`) falls back to."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from datawell.errors import IngestionFailed
from datawell.ingest.batches import DEFAULT_LIMITS, Batch, Limits, column_names
from datawell.ingest.formats import CSV_DELIMITERS, head, sniff_encoding, undecodable


class CsvTable:
    """Delimited text. The first non-blank line is the header; every record must have as
    many fields as the header."""

    unit = "line"

    def __init__(self, path: Path, delimiter: str | None = None, limits: Limits = DEFAULT_LIMITS) -> None:
        self.path = path
        self.limits = limits
        self.encoding = sniff_encoding(path)
        self.delimiter = delimiter or self._sniff_delimiter()
        self.header_line = 1  # the physical line the header ends on
        self.columns = column_names(self._header())

    def _sniff_delimiter(self) -> str:
        sample = head(self.path).decode(self.encoding, errors="ignore")
        sample = sample[: sample.rfind("\n")] if "\n" in sample else sample
        try:
            return csv.Sniffer().sniff(sample, delimiters=CSV_DELIMITERS).delimiter
        except csv.Error:
            return ","

    def _open(self, raw: BinaryIO, field_chars: int) -> Any:
        # The limit is process-wide in the csv module; every reader sets its own before reading.
        csv.field_size_limit(field_chars)
        text = io.TextIOWrapper(raw, encoding=self.encoding, newline="")
        return csv.reader(text, delimiter=self.delimiter, strict=True)

    def _header(self) -> list[str]:
        limit = self.limits.header_chars
        with self.path.open("rb") as raw:
            reader = self._open(raw, limit)
            try:
                for record in reader:
                    if any(cell.strip() for cell in record):
                        self.header_line = reader.line_num
                        if sum(map(len, record)) > limit:
                            raise IngestionFailed(self._header_too_long())
                        return record
            except csv.Error as exc:
                if "field limit" in str(exc):
                    raise IngestionFailed(self._header_too_long()) from None
                raise IngestionFailed(f"line {reader.line_num}: {exc}") from None
            except UnicodeDecodeError:
                raise undecodable(self.encoding, f"line {reader.line_num + 1}") from None
        raise IngestionFailed("the file is empty: expected a header line naming the columns")

    def _header_too_long(self) -> str:
        return (
            f"the header line is longer than {self.limits.header_chars:,} characters "
            "(setting DATAWELL_INGEST_MAX_HEADER_CHARS): is the first line really a header?"
        )

    def batches(self, size: int) -> Iterator[Batch]:
        width = len(self.columns)
        with self.path.open("rb") as raw:
            reader = self._open(raw, self.limits.field_chars)
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
                    if any("\x00" in cell for cell in record):
                        raise IngestionFailed(
                            f"line {start}: a field holds a NUL character (\\0), which the stores cannot keep; "
                            "remove it and upload the file again"
                        )
                    batch.rows.append(record)
                    batch.locations.append(start)
                    if len(batch.rows) >= size:
                        batch.position = raw.tell()
                        yield batch
                        batch = Batch()
            except csv.Error as exc:
                if "field limit" in str(exc):
                    raise IngestionFailed(
                        f"line {last_line + 1}: a field is longer than {self.limits.field_chars:,} characters "
                        "(setting DATAWELL_INGEST_MAX_FIELD_CHARS; or a quote is never closed)"
                    ) from None
                raise IngestionFailed(
                    f"line {last_line + 1}: {exc} (check the quotes of the record starting on this line)"
                ) from None
            except UnicodeDecodeError:
                raise undecodable(self.encoding, f"line {last_line + 1}") from None
            batch.position = raw.tell()
            if batch.rows:
                yield batch
