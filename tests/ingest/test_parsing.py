"""Parsers, type inference and the similarity match, without a database."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from datawell.config import Settings
from datawell.errors import IngestionFailed
from datawell.ingest import tabular
from datawell.ingest.documents import chunks
from datawell.ingest.fieldtypes import CoercionError, Misfit, TypeInference, coerce, coerce_column
from datawell.ingest.formats import detect_format, sniff_encoding
from datawell.ingest.limits import FileLimits
from datawell.ingest.mapping import similarity_mapping
from datawell.ingest.tabular import open_table

LIMITS = Settings().group(FileLimits, "ingest_max_")


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["1", "2", "", None], "integer"),
        (["1", "2.5"], "real"),
        (["1", "1e3", "-0.5"], "real"),
        (["true", "No", "YES"], "boolean"),
        (["2024-01-02", "2024-01-02T03:04:05+02:00", "2024-01-02 03:04Z"], "timestamp"),
        (["00501", "10001"], "text"),  # leading zeros are codes, not numbers
        (["1", "true"], "text"),
        (["2024-13-45"], "text"),
        ([None, ""], "text"),
        ([1, 2.5], "real"),
        ([True, False], "boolean"),
        ([{"a": 1}], "text"),
        (["nan"], "text"),
    ],
)
def test_inference(values: list[object], expected: str) -> None:
    whole, one_by_one = TypeInference(["c"]), TypeInference(["c"])
    whole.observe("c", values)
    for value in values:
        one_by_one.observe("c", [value])
    assert whole.result() == one_by_one.result() == {"c": expected}


def test_coercion() -> None:
    assert coerce(" 42 ", "integer") == 42
    assert coerce(3.0, "integer") == 3
    assert coerce("2", "real") == 2.0
    assert coerce("yes", "boolean") is True
    assert coerce("2024-01-02T03:04:05Z", "timestamp") == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert coerce("2024-01-02", "timestamp") == datetime(2024, 1, 2, tzinfo=UTC)
    assert coerce({"a": [1]}, "text") == '{"a": [1]}'
    assert coerce("", "integer") is None
    for value, kind in (("1.5", "integer"), ("abc", "real"), ("maybe", "boolean"), ("soon", "timestamp")):
        with pytest.raises(CoercionError):
            coerce(value, kind)
    with pytest.raises(CoercionError, match="too large"):
        coerce(str(2**70), "integer")


def test_similarity_mapping_matches_names_and_leaves_the_rest() -> None:
    schema = {"order_id": "Order number", "customer": "Customer name", "total": "Amount in EUR", "notes": ""}
    columns = ["OrderID", "Customer Name", "Total (EUR)", "colour"]
    assert similarity_mapping(schema, columns) == {
        "order_id": "OrderID",
        "customer": "Customer Name",
        "total": "Total (EUR)",
        "notes": None,
    }


def test_a_column_feeds_one_field_in_the_similarity_match() -> None:
    assert similarity_mapping({"name": "", "name_2": ""}, ["name"]) == {"name": "name", "name_2": None}


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("a.csv", b"a,b\n1,2\n", "csv"),
        ("a.TSV", b"a\tb\n", "tsv"),
        ("upload", b"%PDF-1.4\n", "pdf"),
        ("upload", b"PAR1....", "parquet"),
        ("upload", b"PK\x03\x04....", "xlsx"),
        ("upload", b'  [{"a": 1}]', "json"),
        ("upload", b'{"a": 1}\n', "jsonl"),
        ("upload", b"a;b;c\n1;2;3\n4;5;6\n", "csv"),
        ("upload", b"Dear reader,\nthis is prose.\n", "text"),
    ],
)
def test_format_detection(tmp_path: Path, name: str, data: bytes, expected: str) -> None:
    assert detect_format(write(tmp_path, "f", data), name) == expected


def test_encodings(tmp_path: Path) -> None:
    assert sniff_encoding(write(tmp_path, "a", "naïve".encode())) == "utf-8"
    assert sniff_encoding(write(tmp_path, "b", "\ufeffnaïve".encode())) == "utf-8-sig"
    assert sniff_encoding(write(tmp_path, "c", "naïve".encode("utf-16"))) == "utf-16"
    assert sniff_encoding(write(tmp_path, "d", "Café Müller, Straße".encode("cp1252"))) == "cp1252"
    cyrillic = "Привет, это тестовый текст на русском языке, и его довольно много.\n" * 5
    assert sniff_encoding(write(tmp_path, "e", cyrillic.encode("cp1251"))) == "cp1251"


def test_a_multibyte_character_cut_by_the_sample_is_still_utf8(tmp_path: Path) -> None:
    data = b"a" * (64 * 1024 - 1) + "é".encode()
    assert sniff_encoding(write(tmp_path, "f", data)) == "utf-8"


def test_header_names_are_made_unique(tmp_path: Path) -> None:
    table = open_table(write(tmp_path, "h.csv", b"a,,a, b \n1,2,3,4\n"), "csv")
    assert table.columns == ["a", "column_2", "a_2", "b"]


def test_json_array_items_span_read_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tabular, "READ_CHARS", 7)
    items = [{"id": i, "text": "x" * (i * 5), "nested": {"list": [1, 2, {"deep": "}]"}]}} for i in range(30)]
    path = write(tmp_path, "a.json", json.dumps(items, indent=1).encode())
    table = open_table(path, "json")
    rows = [row for batch in table.batches(4) for row in batch.rows]
    assert [r[0] for r in rows] == list(range(30))
    assert rows[3][1] == "x" * 15


def test_json_array_errors_name_the_line(tmp_path: Path) -> None:
    for data, line in ((b'[\n{"a": 1},\n{"a": 2}\n{"a": 3}]', 4), (b'[{"a": 1}, 5]', 1), (b'[{"a": 1}', 1)):
        path = write(tmp_path, "bad.json", data)
        with pytest.raises(IngestionFailed, match=f"^line {line}:"):
            table = open_table(path, "json")
            list(table.batches(10))


def test_wrapped_json_document(tmp_path: Path) -> None:
    path = write(tmp_path, "w.json", b'{\n  "data": [\n {"a": 1},\n {"a": 2, "b": 3}\n ]\n}\n')
    table = open_table(path, "json")
    assert table.columns == ["a", "b"]
    assert [row for batch in table.batches(10) for row in batch.rows] == [[1, None], [2, 3]]


def test_csv_streams_in_batches_with_lines_and_positions(tmp_path: Path) -> None:
    data = b"a,b\n" + b"".join(b"%d,x\n" % i for i in range(10))
    table = open_table(write(tmp_path, "s.csv", data), "csv")
    batches = list(table.batches(4))
    assert [len(b.rows) for b in batches] == [4, 4, 2]
    assert batches[0].locations == [2, 3, 4, 5]
    assert batches[-1].position == len(data)


def test_empty_files_fail_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(IngestionFailed, match="empty"):
        open_table(write(tmp_path, "e.csv", b"\n\n"), "csv")
    with pytest.raises(IngestionFailed, match="empty"):
        open_table(write(tmp_path, "e.json", b"  "), "json")
    with pytest.raises(IngestionFailed, match="not a readable Parquet"):
        open_table(write(tmp_path, "e.parquet", b"nope"), "parquet")
    with pytest.raises(IngestionFailed, match="not a readable XLSX"):
        open_table(write(tmp_path, "e.xlsx", b"nope"), "xlsx")


def test_undecodable_bytes_name_the_line(tmp_path: Path) -> None:
    data = b"a,b\n" + b"1,x\n" * 30000 + b"2,\xff\xfe\n"  # the first 64 KiB are plain ASCII, so UTF-8 is guessed
    table = open_table(write(tmp_path, "u.csv", data), "csv")
    with pytest.raises(IngestionFailed, match="not valid utf-8 text"):
        list(table.batches(1000))


def test_text_chunks_end_at_paragraphs(tmp_path: Path) -> None:
    paragraphs = [f"Paragraph {i}. " + "word " * 40 for i in range(20)]
    path = write(tmp_path, "t.txt", "\n\n".join(paragraphs).encode())
    found = list(chunks(path, "text", LIMITS, size=1000))
    assert len(found) > 3
    assert all(len(c.text) <= 1000 for c in found)
    assert all(c.text.startswith("Paragraph") for c in found)
    assert found[0].label.startswith("lines 1-")
    assert "".join(c.text for c in found).count("Paragraph") == 20


def test_a_pdf_without_text_fails(tmp_path: Path) -> None:
    from tests.ingest.support import pdf_bytes

    path = write(tmp_path, "scan.pdf", pdf_bytes(["", ""]))
    with pytest.raises(IngestionFailed, match="no text layer"):
        list(chunks(path, "pdf", LIMITS))
    with pytest.raises(IngestionFailed, match="not a readable PDF"):
        list(chunks(write(tmp_path, "bad.pdf", b"%PDF-1.4 garbage"), "pdf", LIMITS))


def test_column_coercion_fast_and_slow_paths_agree() -> None:
    assert coerce_column(["1", "", None, " 2 "], "integer") == [1, None, None, 2]
    assert coerce_column(["1.5", "2", "-3e2"], "real") == [1.5, 2.0, -300.0]
    assert coerce_column(["Yes", "false", " "], "boolean") == [True, False, None]
    assert coerce_column(["a", "  ", None, 5], "text") == ["a", None, None, "5"]
    assert coerce_column(["2024-01-02T03:00:00+02:00", "2024-01-02"], "timestamp") == [
        datetime(2024, 1, 2, 1, tzinfo=UTC),
        datetime(2024, 1, 2, tzinfo=UTC),
    ]
    for values, kind, index in ((["1", "007"], "integer", 1), (["1", "nan"], "real", 1), (["x"], "timestamp", 0)):
        with pytest.raises(Misfit) as caught:
            coerce_column(values, kind)
        assert caught.value.index == index


def test_nested_json_keys_are_columns_of_their_own(tmp_path: Path) -> None:
    path = tmp_path / "members.json"
    records = [
        {"id": 1, "name": {"first": "Ana", "last": "Silva"}, "plan": {"fee": {"eur": 19.9}}},
        {"id": 2, "name": {"first": "Jonas"}, "plan": None},
    ]
    path.write_text(json.dumps(records), encoding="utf-8")
    table = tabular.JsonTable(path)
    assert table.columns == ["id", "name", "plan", "name.first", "name.last", "plan.fee", "plan.fee.eur"]
    rows = next(table.batches(10)).rows
    assert rows[0][3:] == ["Ana", "Silva", {"eur": 19.9}, 19.9]
    assert rows[1][3:] == ["Jonas", None, None, None]


def test_an_xlsx_title_row_and_a_two_row_header_name_the_columns() -> None:
    rows = [
        ["Regional sales 2024", None, None, None, None],
        ["Region", "Q1", None, "Q2", None],
        [None, "Units", "Revenue", "Units", "Revenue"],
        ["North", 1200, 54000.5, 1350, 60750.0],
    ]
    assert tabular.header_of(rows) == (3, ["Region", "Q1 Units", "Q1 Revenue", "Q2 Units", "Q2 Revenue"])
    # A plain header stays one row, even when the first data row is all text.
    assert tabular.header_of([["name", "city"], ["Ana", "Lisbon"]]) == (1, ["name", "city"])
