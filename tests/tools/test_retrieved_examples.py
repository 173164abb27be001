"""Examples retrieved from other databases (issue 50): masking, the denylist, leave one database out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datawell.tools.retrieved_examples import (
    DENYLIST,
    CorpusEntry,
    CorpusError,
    RetrievedExamples,
    bundled_corpus,
    load_corpus,
    mask,
    render_retrieved,
)

ACADEMIC = ["author", "aid", "name", "publication", "pid", "title", "citation_num", "domain", "did"]


def entry(database: str, question: str = "How many rows are there?", suite: str = "dev") -> CorpusEntry:
    return CorpusEntry(
        suite=suite,
        case=f"{database}-1",
        database=database,
        question=question,
        masked=mask(question, []),
        query="SELECT COUNT(*) FROM t",
        tables="t",
    )


def test_a_question_is_masked_by_its_database_s_names_and_its_values() -> None:
    question = 'How many publications by authors in the domain "Machine Learning" got more than 10 citations?'

    assert mask(question, ACADEMIC) == "how many <name> by <name> in the <name> <value> got more than <value> <name>"


def test_words_that_say_how_a_question_is_built_stay_even_when_a_column_is_named_so() -> None:
    assert mask("What is the total number of orders per year?", ["orders", "total", "number", "year"]) == (
        "what is the total number of <name> per year"
    )


def test_the_gold_values_are_masked_too_and_runs_of_names_become_one() -> None:
    assert mask("Which flights leave from boston?", ["flight", "departure_airport"], ["BOSTON"]) == (
        "which <name> leave from <value>"
    )
    assert mask("List the aircraft capacity", ["aircraft", "capacity"]) == "list the <name>"


def test_the_bundled_corpus_holds_no_held_out_or_validation_database() -> None:
    entries = load_corpus()

    assert entries
    assert not {e.database for e in entries} & DENYLIST
    assert {e.suite for e in entries} <= {"dev", "nl2ql", "erp"}


@pytest.mark.parametrize("database", sorted(DENYLIST))
def test_a_corpus_with_a_denied_database_is_refused_when_loaded_and_when_retrieved_from(
    tmp_path: Path, database: str
) -> None:
    denied = entry(database)
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps(entry("atis").model_dump()) + "\n" + json.dumps(denied.model_dump()) + "\n")

    with pytest.raises(CorpusError, match=database):
        load_corpus(path)
    with pytest.raises(CorpusError, match=database):
        RetrievedExamples([entry("atis"), denied])


def test_a_pair_of_the_validation_suite_is_refused_whatever_its_database() -> None:
    with pytest.raises(CorpusError):
        RetrievedExamples([entry("atis", suite="validation")])


@pytest.mark.parametrize(
    "question",
    [
        "How many brokers have traded more than 100 shares?",
        "Which car dealership sold the most cars in 2023?",
        "What is the average rating of the restaurants in each city?",
        "Which movies were directed by the same person as their writer?",
    ],
)
def test_retrieval_never_returns_a_held_out_or_validation_database_s_pair(question: str) -> None:
    corpus = bundled_corpus()

    found = corpus.similar(question, ["broker", "cars", "restaurant", "movie"], k=len(corpus.entries))

    assert len(found) == len(corpus.entries)
    assert not {e.database for e in found} & DENYLIST


def test_a_question_on_academic_never_gets_an_academic_pair() -> None:
    corpus = bundled_corpus()
    academic = [e for e in corpus.entries if e.database == "academic"]

    assert academic
    for asked in academic:
        # Its own question verbatim would be the best match, if it could be shown.
        found = corpus.similar(asked.question, ACADEMIC, k=4, leave_out="academic")
        assert len(found) == 4 and all(e.database != "academic" for e in found)
    everything = corpus.similar(academic[0].question, ACADEMIC, k=len(corpus.entries), leave_out="academic")
    assert len(everything) == len(corpus.entries) - len(academic)


def test_without_leave_out_the_closest_question_comes_first() -> None:
    corpus = RetrievedExamples(
        [entry("atis", "Which airline has the most flights?"), entry("retail", "How many orders are there?")]
    )

    assert [e.database for e in corpus.similar("How many loans are there?", ["loans"], k=1)] == ["retail"]
    assert corpus.similar("How many loans are there?", ["loans"], k=0) == []


def test_an_example_shows_its_tables_question_and_query() -> None:
    shown = render_retrieved([entry("retail", "How many orders are there?")])

    assert shown.startswith("Examples from other databases")
    assert "Tables: t\nQuestion: How many orders are there?\nQuery: SELECT COUNT(*) FROM t\n\n" in shown
    assert render_retrieved([]) == ""
