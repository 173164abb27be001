"""The error table: every error class has exactly one row, and every surface renders that row."""

from __future__ import annotations

import datawell.errors as errors_module
from datawell.errors import ERRORS, UNEXPECTED, DatawellError, ErrorMapping, QueryError, mapping_of


def error_tree(cls: type[DatawellError]) -> list[type[DatawellError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in error_tree(child))]


def test_every_error_class_is_mapped_exactly_once() -> None:
    tree = error_tree(DatawellError)
    assert len(tree) == len(set(tree))
    assert set(tree) == set(ERRORS)  # no class without a row, no row without a class
    declared = {v for v in vars(errors_module).values() if isinstance(v, type) and issubclass(v, DatawellError)}
    assert declared == set(tree)


def test_each_row_is_a_complete_mapping() -> None:
    for cls, row in ERRORS.items():
        assert isinstance(row, ErrorMapping), cls
        assert 400 <= row.http_status < 600 and row.code.isupper() and row.json_rpc in (-32602, -32603), cls
        # Client errors are the caller's to fix; service errors are not.
        assert (row.http_status < 500) == (row.json_rpc == -32602), cls


def test_codes_name_one_meaning() -> None:
    by_code: dict[str, set[tuple[int, int]]] = {}
    for row in ERRORS.values():
        by_code.setdefault(row.code, set()).add((row.http_status, row.json_rpc))
    assert all(len(rows) == 1 for rows in by_code.values()), by_code


def test_lookup_follows_the_class_and_falls_back_to_unexpected() -> None:
    assert QueryError("x").error_code == "QUERY_ERROR"
    assert mapping_of(QueryError("x")).http_status == 422
    assert mapping_of(RuntimeError("boom")) is UNEXPECTED
    assert UNEXPECTED.http_status == 500 and UNEXPECTED.code == "INTERNAL_ERROR"
