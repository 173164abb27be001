"""Bounds on what one file may cost to read, so a small hostile file (a ZIP bomb, JSON nested
thousands deep, a PDF of a million pages) fails at once with a message naming the limit and
its setting instead of exhausting the worker's memory or time."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datawell.errors import IngestionFailed

# Small members (the workbook's XML boilerplate) legitimately pack very well; only members
# large enough to matter are held to the ratio (Apache POI's ZipSecureFile does the same).
RATIO_FLOOR_BYTES = 1024 * 1024


@dataclass(frozen=True)
class FileLimits:
    unpacked_bytes: int
    unpack_ratio: float
    pdf_pages: int
    document_chars: int
    prompt_chars: int


def check_archive(path: Path, limits: FileLimits) -> None:
    """Refuse a ZIP-based file (XLSX) whose members declare more unpacked bytes, or a higher
    packing ratio, than the limits allow. The declared sizes are what `zipfile` stops reading
    at, so checking them bounds what reading the workbook can unpack."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise IngestionFailed(f"the file is not a readable XLSX workbook ({exc})") from None
    total = sum(m.file_size for m in members)
    if total > limits.unpacked_bytes:
        raise IngestionFailed(
            f"the workbook unpacks to {total:,} bytes, more than the limit of {limits.unpacked_bytes:,} "
            "(DATAWELL_INGEST_MAX_UNPACKED_BYTES); split it or save it as CSV"
        )
    for member in members:
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > RATIO_FLOOR_BYTES and ratio > limits.unpack_ratio:
            raise IngestionFailed(
                f"the workbook's part {member.filename} unpacks to {ratio:,.0f} times its packed size, more than "
                f"the limit of {limits.unpack_ratio:,.0f} (DATAWELL_INGEST_MAX_UNPACK_RATIO): it looks like a ZIP "
                "bomb; save the data as CSV"
            )


def too_deep(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests objects and arrays more than `limit` levels deep
    (a flat record is one level). Iterative, so no depth can exhaust Python's stack."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def nested_too_deeply(where: str, limit: int) -> IngestionFailed:
    return IngestionFailed(
        f"{where}: the JSON nests objects or arrays more than {limit} levels deep "
        "(DATAWELL_INGEST_MAX_JSON_DEPTH); flatten the records and upload again"
    )
