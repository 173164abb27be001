"""Scoring: saved predictions + the suite's assertions → a result per case. No model is
called here, except the LLM judge, and only when a judge is given."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Protocol

from pydantic import BaseModel, Field

from datawell.errors import ERRORS, QueryRefused
from datawell.evals import metrics
from datawell.evals.records import ErrorInfo, GoldResult, Prediction
from datawell.evals.suites import Assertion, Case, Suite

# The one failure that is a deliberate refusal: the model declined to write a query. A run
# that gave up ("no valid query after 3 attempts"), crashed or timed out did not refuse.
REFUSAL_CODE = ERRORS[QueryRefused].code


class JudgeVerdict(BaseModel):
    """What the judge model returns for one answer."""

    score: float = Field(ge=0, le=1, description="1 = fully meets the rubric, 0 = not at all")
    reason: str = Field(description="one or two sentences: why this score")


class Judge(Protocol):
    async def __call__(self, question: str, answer: str, rubric: str, reference: str) -> JudgeVerdict: ...


class Outcome(BaseModel):
    """One assertion on one case. `passed` is None when the assertion was skipped (an
    LLM judge without a judge model)."""

    type: str
    passed: bool | None
    score: float
    weight: float
    detail: str = ""
    # Why it failed, as a category a report counts ("wrong rows: more rows", "no rows: no valid
    # query", "refusal: answered"; `failure_kind`); "" when it passed or its type says enough.
    kind: str = ""


class CaseResult(BaseModel):
    case_id: str
    tags: list[str]
    difficulty: str
    passed: bool
    score: float
    outcomes: list[Outcome]
    metrics: dict[str, float] = Field(default_factory=dict)
    latency_ms: float
    tokens: int | None
    error: str | None = None
    question: str = ""
    output: str = ""  # the query, answer or links, shortened, for the report
    run_id: str | None = None  # the case's recorded run


GoldLookup = Callable[[str], Awaitable[GoldResult]]


def _outcome(
    assertion: Assertion, passed: bool, score: float | None = None, detail: str = "", kind: str = ""
) -> Outcome:
    return Outcome(
        type=assertion.type,
        passed=passed,
        score=float(passed) if score is None else score,
        weight=assertion.weight,
        detail=detail,
        kind="" if passed else kind,
    )


def refused(prediction: Prediction) -> bool:
    """The model declined to answer (its draft gave a refusal) and no rows came back."""
    return prediction.error is not None and prediction.error.code == REFUSAL_CODE and not prediction.rows


async def check(
    assertion: Assertion,
    case: Case,
    prediction: Prediction,
    gold: GoldLookup,
    judge: Judge | None,
) -> Outcome:
    kind = assertion.type
    value = assertion.value
    answer = prediction.answer or ""
    if kind == "execution-match":
        return await _execution_match(assertion, case, prediction, gold)
    if kind == "valid-query":
        ok = prediction.rows is not None and prediction.error is None
        return _outcome(assertion, ok, detail="" if ok else _error_text(prediction))
    if kind == "refusal":
        ok = refused(prediction)
        why = "refusal: answered" if prediction.rows is not None or prediction.error is None else "refusal: failed"
        return _outcome(assertion, ok, detail="refused" if ok else _not_refused(prediction), kind=why)
    if kind == "max-repairs":
        repairs = prediction.repairs
        ok = repairs is not None and repairs <= int(value)
        return _outcome(assertion, ok, detail=f"{repairs} repairs")
    if kind == "rows-contain":
        missing = metrics.rows_contain(prediction.rows or [], value)
        return _outcome(
            assertion, not missing and prediction.rows is not None, detail=f"missing {missing}" if missing else ""
        )
    if kind == "query-contains":
        ok = str(value).lower() in (prediction.query or "").lower()
        return _outcome(assertion, ok)
    if kind in ("contains", "icontains", "not-contains"):
        wanted = value if isinstance(value, list) else [value]
        fold: Callable[[str], str] = str.casefold if kind != "contains" else str
        present = [str(w) for w in wanted if fold(str(w)) in fold(answer)]
        if kind == "not-contains":
            return _outcome(assertion, not present, detail=f"found {present}" if present else "")
        missing = [str(w) for w in wanted if str(w) not in present]
        return _outcome(assertion, not missing, detail=f"missing {missing}" if missing else "")
    if kind == "regex":
        ok = re.search(str(value), answer, flags=re.IGNORECASE | re.MULTILINE) is not None
        return _outcome(assertion, ok)
    if kind == "numeric":
        found = metrics.numeric_match(answer, float(value), assertion.tolerance or 0.0)
        return _outcome(assertion, found is not None, detail=f"found {found}" if found is not None else f"no {value}")
    if kind == "llm-judge":
        if judge is None:
            return Outcome(type=kind, passed=None, score=0.0, weight=assertion.weight, detail="skipped: no judge model")
        verdict = await judge(prediction.question, answer, str(value), case.expected.answer or "")
        threshold = 0.7 if assertion.threshold is None else assertion.threshold
        return _outcome(assertion, verdict.score >= threshold, verdict.score, verdict.reason)
    if kind == "links-f1":
        score = metrics.link_scores(
            ((link.origin, link.destination, link.match_type) for link in prediction.links or []),
            ((link.origin, link.destination, link.match_type) for link in case.expected.links),
        )
        threshold = 1.0 if assertion.threshold is None else assertion.threshold
        detail = f"P={score.precision:.2f} R={score.recall:.2f} ({score.true_positives}/{score.gold} found, {score.predicted} predicted)"
        return _outcome(assertion, prediction.links is not None and score.f1 >= threshold, score.f1, detail)
    if kind == "fields-match":
        if prediction.rows is None:
            return _outcome(assertion, False, 0.0, detail=f"no rows: {_error_text(prediction)}")
        fields = metrics.field_scores(prediction.rows, case.expected.rows, case.expected.key)
        threshold = 1.0 if assertion.threshold is None else assertion.threshold
        detail = f"{fields.right}/{fields.total} fields right" + (
            f"; {'; '.join(fields.wrong[:5])}" if fields.wrong else ""
        )
        return _outcome(assertion, fields.accuracy >= threshold, fields.accuracy, detail)
    if kind == "latency":
        return _outcome(assertion, prediction.latency_ms <= float(value), detail=f"{prediction.latency_ms:.0f} ms")
    if kind == "tokens":
        used = prediction.tokens.total if prediction.tokens else 0
        return _outcome(assertion, used <= int(value), detail=f"{used} tokens")
    raise AssertionError(f"unhandled assertion type {kind}")


async def _execution_match(assertion: Assertion, case: Case, prediction: Prediction, gold: GoldLookup) -> Outcome:
    if prediction.rows is None:
        return _outcome(assertion, False, detail=f"no rows: {_error_text(prediction)}", kind=_no_rows_kind(prediction))
    detail = ""
    kinds = []  # why it matches neither the gold nor each alternative
    flags = {"any_column_order": assertion.column_order == "ignore", "extra_columns": assertion.extra_columns}
    for index, gold_query in enumerate(_gold_and_alternatives(assertion, case)):
        expected = await gold(gold_query)
        if expected.rows is None:
            if index == 0:
                return _outcome(
                    assertion, False, detail=f"the gold query failed: {expected.error}", kind="gold query failed"
                )
            continue
        ordered = _ordered(assertion, case, gold_query)
        if metrics.results_match(prediction.rows, expected.rows, ordered=ordered, **flags):
            return _outcome(assertion, True, detail="" if index == 0 else f"matches alternative {index}")
        if index == 0:
            detail = f"{len(prediction.rows)} rows, gold has {len(expected.rows)}" + (" (ordered)" if ordered else "")
        kinds.append(metrics.mismatch(prediction.rows, expected.rows, ordered=ordered, **flags))
    # Columns are missing only when no alternative asks for as few as the rows have.
    kind = next((k for k in kinds if k != "columns missing"), kinds[0])  # the gold's is always there
    return _outcome(assertion, False, detail=detail, kind=f"wrong rows: {kind}")


def _no_rows_kind(prediction: Prediction) -> str:
    """Why no rows came back: a refusal, or the run's last problem as the checker names it
    ("the query names unknown columns"), without the names it quotes; else the error code."""
    error = prediction.error
    if error is None:
        return "no rows: no valid query"
    if error.code == REFUSAL_CODE:
        return "no rows: answerable refused"
    found = _LAST_PROBLEM.search(error.message)
    problem = re.split(r"['\"(]", found.group(1).rsplit(": ", 1)[-1])[0].strip() if found else ""
    return f"no rows: no valid query ({problem[:80] or error.code})"


_LAST_PROBLEM = re.compile(r"the last problem: ([^;\n]+)")


def failure_kind(result: CaseResult) -> str:
    """Why a failed case failed, as a category: its first failed outcome's kind (its type
    when the outcome has none, as in reports scored before kinds were kept)."""
    failed = next((o for o in result.outcomes if o.passed is False), None)
    return (failed.kind or failed.type) if failed else "no outcome failed"


# sql-eval's test for a question that asks for an order (eval/eval.py, normalize_table).
_ASKS_FOR_ORDER = re.compile(r"\b(order|sort|arrange)\b", re.IGNORECASE)


def _ordered(assertion: Assertion, case: Case, gold_query: str) -> bool:
    if assertion.order == "question":
        return "order_by" in case.tags or bool(_ASKS_FOR_ORDER.search(case.vars.question))
    return {"strict": True, "ignore": False}.get(assertion.order, metrics.query_orders(gold_query))


def _gold_and_alternatives(assertion: Assertion, case: Case) -> list[str]:
    """The gold query, then the case's alternatives (only for the case's own gold: an
    assertion with a `value` of its own names exactly one query)."""
    if assertion.value is not None:
        return [str(assertion.value)]
    return [str(case.expected.query), *case.expected.alternatives]


def _not_refused(prediction: Prediction) -> str:
    if prediction.rows is not None or prediction.error is None:
        return f"answered with {prediction.query!r}"
    return f"did not refuse, failed: {_error_text(prediction)}"


def _error_text(prediction: Prediction) -> str:
    return f"{prediction.error.code}: {prediction.error.message}" if prediction.error else "no query ran"


def _summary_output(prediction: Prediction) -> str:
    if prediction.kind == "nl2ql":
        return prediction.query or ""
    if prediction.kind == "assistant":
        return prediction.answer or ""
    if prediction.kind == "extract":
        return f"{len(prediction.rows or [])} rows; {prediction.answer or ''}"
    return ", ".join(f"{link.origin}→{link.destination}" for link in prediction.links or [])


def case_metrics(suite: Suite, outcomes: list[Outcome], prediction: Prediction) -> dict[str, float]:
    """The per-case numbers the report averages: valid-query, repairs, execution match, P/R/F1."""
    found: dict[str, float] = {}
    if suite.kind == "nl2ql":
        found["valid_query"] = float(prediction.rows is not None and prediction.error is None)
        if prediction.repairs is not None:
            found["repairs"] = float(prediction.repairs)
    for outcome in outcomes:
        if outcome.type == "execution-match":
            found["execution_accuracy"] = outcome.score
        if outcome.type == "refusal":
            found["refusal_accuracy"] = outcome.score
        if outcome.type == "fields-match":
            found["field_accuracy"] = outcome.score
            match = re.match(r"(\d+)/(\d+) fields right", outcome.detail)
            if match:
                found["fields_right"], found["fields_total"] = float(match[1]), float(match[2])
        if outcome.type == "links-f1":
            found["f1"] = outcome.score
            match = re.match(r"P=([\d.]+) R=([\d.]+)", outcome.detail)
            if match:
                found["precision"], found["recall"] = float(match[1]), float(match[2])
    return found


async def score_case(
    suite: Suite, case: Case, prediction: Prediction, gold: GoldLookup, judge: Judge | None = None
) -> CaseResult:
    outcomes = [await check(a, case, prediction, gold, judge) for a in suite.assertions(case)]
    counted = [o for o in outcomes if o.passed is not None]
    weight = sum(o.weight for o in counted)
    score = sum(o.score * o.weight for o in counted) / weight if weight else 0.0
    return CaseResult(
        case_id=case.id,
        tags=suite.tags(case),
        difficulty=case.difficulty,
        passed=bool(counted) and all(o.passed for o in counted),
        score=score,
        outcomes=outcomes,
        metrics=case_metrics(suite, outcomes, prediction),
        latency_ms=prediction.latency_ms,
        tokens=prediction.tokens.total if prediction.tokens else None,
        error=_error_text(prediction) if prediction.error else None,
        question=case.vars.question,
        output=_summary_output(prediction)[:500],
        run_id=prediction.run_id,
    )


GoldFallback = Callable[[Case, str], Awaitable[GoldResult]]


def saved_gold(case: Case, prediction: Prediction | None, fallback: GoldFallback | None) -> GoldLookup:
    """Gold results as the prediction run saved them; a gold query the suite changed since
    is run through `fallback` (on a fresh fixture store), or reported as missing."""

    async def lookup(query: str) -> GoldResult:
        saved = prediction.gold_for(query) if prediction else None
        if saved is not None:
            return saved
        if fallback is not None:
            return await fallback(case, query)
        return GoldResult(query=query, error="not run with the predictions (the gold query changed since)")

    return lookup


async def score_all(
    suite: Suite,
    predictions: list[Prediction],
    judge: Judge | None = None,
    fallback: GoldFallback | None = None,
) -> list[CaseResult]:
    """A result for every case of the suite; a case without a prediction fails with a note."""
    by_case = {p.case_id: p for p in predictions}
    results = []
    for case in suite.cases:
        saved = by_case.get(case.id)
        prediction = saved or Prediction(
            case_id=case.id,
            kind=suite.kind,
            question=case.vars.question,
            error=ErrorInfo(code="NOT_RUN", message="no prediction for this case"),
        )
        results.append(await score_case(suite, case, prediction, saved_gold(case, saved, fallback), judge))
    return results


def missing_gold_queries(suite: Suite, predictions: list[Prediction]) -> list[tuple[str, str]]:
    """(case id, gold query) pairs the saved predictions have no result for."""
    by_case = {p.case_id: p for p in predictions}
    missing = []
    for case in suite.cases:
        prediction = by_case.get(case.id)
        for query in gold_queries(suite, case):
            if prediction is not None and prediction.gold_for(query) is None:
                missing.append((case.id, query))
    return missing


def gold_queries(suite: Suite, case: Case) -> list[str]:
    """Every gold query the case's assertions compare against."""
    found: list[str] = []
    for assertion in suite.assertions(case):
        if assertion.type == "execution-match":
            for query in _gold_and_alternatives(assertion, case):
                if query not in found:
                    found.append(query)
    return found
