"""Which format a file is in, and which text encoding it uses."""

from __future__ import annotations

import codecs
import csv
from pathlib import Path
from typing import Literal

import charset_normalizer

from datawell.errors import IngestionFailed

Format = Literal["csv", "tsv", "json", "jsonl", "parquet", "xlsx", "text", "markdown", "pdf"]
TABULAR: tuple[Format, ...] = ("csv", "tsv", "json", "jsonl", "parquet", "xlsx")
DOCUMENTS: tuple[Format, ...] = ("text", "markdown", "pdf")

SNIFF_BYTES = 64 * 1024
EXTENSIONS: dict[str, Format] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".pdf": "pdf",
}
CSV_DELIMITERS = ",;\t|"
WESTERN_ACCENT_RATIO = 0.3
UTF16_ZERO_RATIO = 0.4  # of the high bytes: Latin text in UTF-16 has a zero in every other byte


def head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    with path.open("rb") as file:
        return file.read(size)


def detect_format(path: Path, name: str) -> Format:
    """By the file name's extension; by the content when the extension says nothing."""
    by_name = EXTENSIONS.get(Path(name).suffix.lower())
    if by_name is not None:
        return by_name
    start = head(path)
    if start.startswith(b"%PDF-"):
        return "pdf"
    if start.startswith(b"PAR1"):
        return "parquet"
    if start.startswith(b"PK\x03\x04"):
        return "xlsx"
    text = start.decode(sniff_encoding(path), errors="ignore").lstrip("\ufeff \t\r\n")
    if text.startswith("["):
        return "json"
    if text.startswith("{"):
        return "jsonl"
    if looks_tabular(text):
        return "csv"
    return "text"


def looks_tabular(sample: str) -> bool:
    """At least two lines splitting into the same number (two or more) of fields."""
    lines = [line for line in sample.splitlines()[:20] if line.strip()]
    if len(lines) < 2:
        return False
    try:
        delimiter = csv.Sniffer().sniff("\n".join(lines), delimiters=CSV_DELIMITERS).delimiter
    except csv.Error:
        return False
    widths = {len(row) for row in csv.reader(lines[:-1], delimiter=delimiter)}
    return len(widths) == 1 and widths.pop() >= 2


def sniff_encoding(path: Path) -> str:
    """UTF-8 (with or without BOM) and UTF-16 by their marks, UTF-16 without a mark by its
    zero bytes; anything else as charset-normalizer guesses from the file's first 64 KiB."""
    start = head(path)
    if start.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if unmarked := utf16_without_bom(start):
        return unmarked
    try:
        start.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as exc:
        # The sample may end in the middle of a multi-byte character.
        if exc.start >= len(start) - 3 and "unexpected end" in exc.reason:
            return "utf-8"
    if looks_western(start):
        return "cp1252"
    best = charset_normalizer.from_bytes(start).best()
    return best.encoding if best is not None else "utf-8"


def utf16_without_bom(sample: bytes) -> str | None:
    """`utf-16-le` or `-be` when one byte of every pair is mostly zero and the other almost
    never is. Zero bytes are valid UTF-8, so such a file would otherwise be read as UTF-8
    text with a NUL between letters (and fail on its field count)."""
    pairs = len(sample) // 2
    if pairs < 2:
        return None
    even, odd = sample[0 : 2 * pairs : 2].count(0), sample[1 : 2 * pairs : 2].count(0)
    if odd >= pairs * UTF16_ZERO_RATIO and even <= pairs * 0.05:
        return "utf-16-le"
    if even >= pairs * UTF16_ZERO_RATIO and odd <= pairs * 0.05:
        return "utf-16-be"
    return None


def looks_western(sample: bytes) -> bool:
    """Windows-1252 text: mostly ASCII letters with a few accented ones. Statistical guessers
    are unreliable on short Western samples (`Müller` comes back as cp775), and this is the
    commonest legacy encoding of spreadsheets exports; text in other alphabets decodes to runs
    of accented letters under cp1252 and fails the ratio."""
    try:
        text = sample.decode("cp1252")
    except UnicodeDecodeError:
        return False
    letters = [c for c in text if c.isalpha()]
    accented = sum(1 for c in letters if ord(c) > 127)
    return bool(letters) and accented / len(letters) < WESTERN_ACCENT_RATIO


def undecodable(encoding: str, where: str) -> IngestionFailed:
    return IngestionFailed(
        f"{where}: the file is not valid {encoding} text (the encoding was guessed from its beginning); "
        "save it as UTF-8 and upload it again"
    )
