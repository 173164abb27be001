"""Documents (plain text, Markdown, PDF) cut into chunks small enough for one model call.

Chunks end at paragraph breaks (and before Markdown headings) where possible, so a record
is rarely split across two chunks. Files are read line by line or page by page, and no
more pages or characters than the limits allow are read or sent to the model."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from datawell.errors import IngestionFailed
from datawell.ingest.formats import Format, sniff_encoding, undecodable
from datawell.ingest.limits import FileLimits

CHUNK_CHARS = 6000


@dataclass(frozen=True)
class Chunk:
    text: str
    label: str  # where it came from, for messages: "lines 1-40", "page 3"
    position: int  # bytes of the file read so far


def chunks(path: Path, fmt: Format, limits: FileLimits, size: int = CHUNK_CHARS) -> Iterator[Chunk]:
    if fmt == "pdf":
        source = pdf_chunks(path, size, limits.pdf_pages)
    else:
        source = text_chunks(path, size, markdown=fmt == "markdown")
    total = 0
    for chunk in source:
        total += len(chunk.text)
        if total > limits.document_chars:
            raise IngestionFailed(
                f"{chunk.label}: the document holds more than {limits.document_chars:,} characters of text, the most "
                "one ingestion sends to the model (DATAWELL_INGEST_MAX_DOCUMENT_CHARS); split it into smaller files"
            )
        yield chunk


def text_chunks(path: Path, size: int, *, markdown: bool = False) -> Iterator[Chunk]:
    encoding = sniff_encoding(path)
    lines: list[str] = []
    length, first, number = 0, 1, 0

    def emit(upto: int) -> Chunk:
        nonlocal lines, length, first
        text = "".join(lines).strip()
        chunk = Chunk(text, f"lines {first}-{upto}" if upto > first else f"line {first}", raw.tell())
        lines, length, first = [], 0, upto + 1
        return chunk

    with path.open("rb") as raw:
        text = io.TextIOWrapper(raw, encoding=encoding)
        try:
            for number, line in enumerate(text, start=1):
                boundary = not line.strip() or (markdown and line.startswith("#"))
                if boundary and length >= size // 2:
                    yield emit(number - 1)
                while len(line) > size:  # a paragraph with no breaks: cut it
                    lines.append(line[:size])
                    line = line[size:]
                    yield emit(number)
                    first = number
                lines.append(line)
                length += len(line)
                if length >= size:
                    yield emit(number)
        except UnicodeDecodeError:
            raise undecodable(encoding, f"line {number + 1}") from None
        if "".join(lines).strip():
            yield emit(number)


def pdf_chunks(path: Path, size: int, max_pages: int) -> Iterator[Chunk]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        pages = len(reader.pages)
    except (PdfReadError, ValueError, OSError) as exc:
        raise IngestionFailed(f"the file is not a readable PDF ({exc})") from None
    if pages > max_pages:
        raise IngestionFailed(
            f"the PDF has {pages:,} pages, more than the {max_pages:,} one ingestion reads "
            "(DATAWELL_INGEST_MAX_PDF_PAGES); split it into smaller files"
        )
    total_bytes = path.stat().st_size
    parts: list[str] = []
    length, first, found = 0, 1, False
    for number in range(1, pages + 1):
        try:
            text = (reader.pages[number - 1].extract_text() or "").strip()
        except (PdfReadError, ValueError, KeyError) as exc:
            raise IngestionFailed(f"page {number}: the PDF page cannot be read ({exc})") from None
        found = found or bool(text)
        position = total_bytes * number // pages
        while len(text) > size:  # a page longer than a chunk: send it in parts
            yield Chunk(text[:size], f"page {number}", position)
            text = text[size:]
        if text:
            parts.append(text)
            length += len(text)
        if length >= size // 2 or number == pages:
            if parts:
                label = f"pages {first}-{number}" if number > first else f"page {number}"
                yield Chunk("\n\n".join(parts), label, position)
            parts, length, first = [], 0, number + 1
    if not found:
        raise IngestionFailed(
            "the PDF has no text layer (scanned pages are images, which are not read); upload a PDF with text"
        )
