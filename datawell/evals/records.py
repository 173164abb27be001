"""What a prediction run saves: one `Prediction` per case (a line of `predictions.jsonl`)
and one `RunInfo` (`run.json`). Scoring reads only these, so a run can be re-scored
without calling a model."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

PREDICTIONS_FILE = "predictions.jsonl"
RUN_FILE = "run.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TokenUsage(_Record):
    input: int = 0
    output: int = 0
    total: int = 0


class ErrorInfo(_Record):
    code: str
    message: str


class GoldResult(_Record):
    """A gold query as it ran on the same store the prediction ran on."""

    query: str
    rows: list[dict[str, Any]] | None = None
    error: str | None = None


class PredictedLink(_Record):
    origin: str
    destination: str
    match_type: str = Field("", alias="matchType")
    hits: int = 0


class Prediction(_Record):
    case_id: str
    kind: str
    question: str = ""
    namespace: str = ""
    query: str | None = None  # nl2ql: the query that ran
    rows: list[dict[str, Any]] | None = None  # nl2ql: its rows
    repairs: int | None = None  # nl2ql: corrections after the first try
    answer: str | None = None  # assistant
    links: list[PredictedLink] | None = None  # curator
    error: ErrorInfo | None = None  # the run failed (for a refusal case, that is the point)
    events: list[dict[str, Any]] = Field(default_factory=list)
    latency_ms: float = 0.0
    tokens: TokenUsage | None = None  # None: the model reported no usage
    run_id: str | None = None  # the run's record (the run viewer, GET /api/v1/runs/{id}) in the eval's store
    gold: list[GoldResult] = Field(default_factory=list)

    def gold_for(self, query: str) -> GoldResult | None:
        for result in self.gold:
            if result.query == query:
                return result
        return None


# The service settings a run records (RunInfo's fields of the same names): what changes its answers.
SETTINGS_RECORDED = (
    "retrieved_examples",
    "query_grammar",
    "query_grammar_repairs",
    "schema_linking",
    "schema_linking_joins",
)


class RunInfo(_Record):
    suite: str
    suite_path: str
    kind: str
    model: str | None = None
    prompt_dir: str | None = None
    scripted: bool = False
    rules_off: list[str] = []  # query rewrite rules switched off for the run (`--rules-off`; issue 47)
    retrieved_examples: int = 0  # examples from other databases per question (DATAWELL_RETRIEVED_EXAMPLES; issue 50)
    # the embedded model wrote its query under the catalog's grammar (DATAWELL_QUERY_GRAMMAR; issue 50)
    query_grammar: bool = False
    query_grammar_repairs: bool = False  # ...its repairs only (DATAWELL_QUERY_GRAMMAR_REPAIRS)
    schema_linking: bool = False  # schema linking widened pruned catalogs (DATAWELL_SCHEMA_LINKING; issue 50)
    schema_linking_joins: bool = False  # ...and wrote its join path (DATAWELL_SCHEMA_LINKING_JOINS)
    threshold: float = 0.0
    held_out: bool = False  # the suite decides and is never read case by case (Suite.held_out)
    started_at: datetime
    finished_at: datetime | None = None
    cases: int = 0


def write_run(folder: Path, info: RunInfo) -> None:
    (folder / RUN_FILE).write_text(info.model_dump_json(indent=2) + "\n", encoding="utf-8")


def read_run(folder: Path) -> RunInfo:
    return RunInfo.model_validate_json((folder / RUN_FILE).read_text(encoding="utf-8"))


def append_prediction(folder: Path, prediction: Prediction) -> None:
    with (folder / PREDICTIONS_FILE).open("a", encoding="utf-8") as handle:
        handle.write(prediction.model_dump_json(by_alias=True) + "\n")


def read_predictions(path: Path) -> list[Prediction]:
    """Predictions from a run folder or a predictions file."""
    file = path / PREDICTIONS_FILE if path.is_dir() else path
    return [
        Prediction.model_validate(json.loads(line))
        for line in file.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def token_usage(usage: dict[str, Any]) -> TokenUsage | None:
    """What a run spent, from langchain's usage callback (None: the model reported nothing)."""
    if not usage:
        return None
    return TokenUsage(
        input=sum(int(u.get("input_tokens", 0)) for u in usage.values()),
        output=sum(int(u.get("output_tokens", 0)) for u in usage.values()),
        total=sum(int(u.get("total_tokens", 0)) for u in usage.values()),
    )
