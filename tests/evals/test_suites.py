"""Suite files: the schema rejects what would silently do nothing, and says where."""

from __future__ import annotations

from pathlib import Path

import pytest

from datawell.evals.fixtures import load_fixture
from datawell.evals.suites import SuiteError, bundled_suites, load_suite
from tests.evals.conftest import write_suite

MINIMAL = """
name: tiny
kind: nl2ql
fixtures: [retail]
cases:
  - id: count
    vars: {question: "How many orders?"}
    expected: {query: "SELECT COUNT(*) FROM orders"}
"""


def test_minimal_suite_gets_execution_match_implied(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, MINIMAL))
    (case,) = suite.cases
    assert [a.type for a in suite.assertions(case)] == ["execution-match"]
    assert case.difficulty == "medium"


def test_unknown_key_is_rejected_with_its_location(tmp_path: Path) -> None:
    body = MINIMAL.replace("kind: nl2ql", "kind: nl2ql\ntreshold: 0.5")
    with pytest.raises(SuiteError) as error:
        load_suite(write_suite(tmp_path, body))
    assert "treshold: unknown key 'treshold'" in str(error.value)


def test_unknown_key_inside_an_assertion(tmp_path: Path) -> None:
    body = MINIMAL + "    assert:\n      - {type: numeric, value: 3, tolerence: 1}\n"
    with pytest.raises(SuiteError) as error:
        load_suite(write_suite(tmp_path, body))
    assert "cases.0.assert.0.tolerence: unknown key 'tolerence'" in str(error.value)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("    assert:\n      - {type: contains}\n", "assertion 'contains' needs a `value`"),
        ("    assert:\n      - {type: numeric, value: lots}\n", "needs a number"),
        ("    assert:\n      - {type: regex, value: '('}\n", "bad pattern"),
        ("    assert:\n      - {type: contains, value: x}\n", "'contains' does not apply to a nl2ql suite"),
        ("    assert:\n      - {type: execution-match, weight: 0}\n", "greater than 0"),
        ("    difficulty: extreme\n", "difficulty"),
    ],
)
def test_invalid_assertions_and_fields(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(SuiteError, match=message):
        load_suite(write_suite(tmp_path, MINIMAL + extra))


def test_duplicate_ids_unknown_namespace_and_missing_gold(tmp_path: Path) -> None:
    body = (
        MINIMAL
        + """  - id: count
    vars: {question: "Again?", namespace: nowhere}
  - id: nothing
    vars: {question: "What?"}
"""
    )
    with pytest.raises(SuiteError) as error:
        load_suite(write_suite(tmp_path, body))
    text = str(error.value)
    assert "cases.1 (count): duplicate case id" in text
    assert "vars.namespace 'nowhere' is not one of the suite's fixtures" in text
    assert "cases.2 (nothing): no assertions" in text


def test_bulk_cases_from_jsonl(tmp_path: Path) -> None:
    (tmp_path / "more.jsonl").write_text(
        '{"id": "a", "vars": {"question": "q1"}, "expected": {"query": "SELECT 1"}}\n\n'
        '{"id": "b", "vars": {"question": "q2"}, "expected": {"refuse": true}, "tags": ["refuse"]}\n'
    )
    suite = load_suite(write_suite(tmp_path, MINIMAL + "cases_files: [more.jsonl]\n"))
    assert [c.id for c in suite.cases] == ["count", "a", "b"]
    assert [a.type for a in suite.assertions(suite.cases[2])] == ["refusal"]


def test_bad_jsonl_line_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "more.jsonl").write_text('{"id": "a", "vars": {"question": "q"}}\n{not json\n')
    with pytest.raises(SuiteError, match=r"more.jsonl:2: not JSON"):
        load_suite(write_suite(tmp_path, MINIMAL + "cases_files: [more.jsonl]\n"))


def test_unknown_suite_names_the_bundled_ones() -> None:
    with pytest.raises(SuiteError, match="bundled suites: assistant, curator, dev, erp, extract, nl2ql, validation"):
        load_suite("no-such-suite")


def test_bundled_suites_are_valid_and_big_enough() -> None:
    loaded = {path.stem: load_suite(path) for path in bundled_suites()}
    nl2ql, assistant, curator = loaded["nl2ql"], loaded["assistant"], loaded["curator"]
    assert len(nl2ql.cases) >= 60
    assert len(assistant.cases) >= 20
    assert curator.kind == "curator" and all(c.expected.links for c in curator.cases)
    assert len(nl2ql.fixtures) >= 4
    tags = {t for c in nl2ql.cases for t in c.tags}
    assert {"join", "aggregate", "date", "semantic", "refuse", "link"} <= tags
    for name in nl2ql.fixtures:
        fixture = load_fixture(name)
        for dataset in fixture.datasets:
            assert 5 <= len(fixture.rows(dataset)) <= 500


def test_the_erp_suite_is_big_enough_for_schema_pruning_to_matter() -> None:
    suite = load_suite("erp")
    fixture = load_fixture("erp")
    assert len(suite.cases) >= 20 and suite.fixtures == ["erp"]
    assert len(fixture.datasets) >= 8
    assert sum(len(d.fields) for d in fixture.datasets.values()) >= 80
    assert 200 <= sum(len(fixture.rows(name)) for name in fixture.datasets) <= 600
    tags = {t for c in suite.cases for t in suite.tags(c)}
    assert {"join", "aggregate", "grouping", "date", "filter", "ordering", "refuse", "erp"} <= tags


def test_fixture_rows_are_typed() -> None:
    rows = load_fixture("library").rows("loans")
    out = [r for r in rows if r["returned_on"] is None]
    assert out and isinstance(rows[0]["late_fee"], float) and rows[0]["loaned_on"].tzinfo is not None


def test_an_extract_suite_needs_its_file_schema_and_rows(tmp_path: Path) -> None:
    body = """
name: files
kind: extract
cases:
  - id: missing
    vars: {file: files/nope.csv, fields: {price: Unit price}}
    expected: {key: sku, rows: [{price: 1.5, colour: red}]}
  - id: empty
    vars: {}
"""
    with pytest.raises(SuiteError) as error:
        load_suite(write_suite(tmp_path, body))
    message = str(error.value)
    assert "cases.0 (missing): vars.file 'files/nope.csv' does not exist beside the suite" in message
    assert "expected.rows name fields not in vars.fields: ['colour']" in message
    assert "expected.key 'sku' is not one of vars.fields" in message
    assert "cases.1 (empty): vars.file is required" in message
    assert "cases.1 (empty): expected.rows is required" in message


def test_other_suites_still_need_a_fixture(tmp_path: Path) -> None:
    body = "name: q\nkind: nl2ql\ncases:\n  - {id: a, vars: {question: q}, expected: {query: SELECT 1}}\n"
    with pytest.raises(SuiteError, match="fixtures: a suite of this kind needs at least one fixture"):
        load_suite(write_suite(tmp_path, body))
