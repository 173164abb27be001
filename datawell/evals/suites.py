"""Eval suites: YAML data with a schema, in the spirit of promptfoo.

A suite names the graph it evaluates (`kind`), the fixture datasets it loads into a fresh
store, a pass-rate threshold, and its cases. A case gives its inputs (`vars`), the gold
values (`expected`: a query, an answer, links, or that the question must be refused) and
assertions (`assert`: type, value, threshold, weight). Bulk cases live in JSON Lines files
named by `cases_files`, one case object per line.

Unknown keys anywhere are errors: a misspelt `treshold` must not silently do nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

SUITES_DIR = Path(__file__).parent / "suites"
FIXTURES_DIR = SUITES_DIR / "fixtures"

Kind = Literal["nl2ql", "assistant", "curator", "extract"]
Difficulty = Literal["easy", "medium", "hard"]
MatchType = Literal["ExactMatch", "NormalizedMatch", "FuzzyMatch", "SemanticMatch", "GeoMatch"]

# Which assertion types apply to which kind of suite; `latency` and `tokens` apply to all.
NL2QL_ASSERTIONS = ("execution-match", "valid-query", "refusal", "max-repairs", "rows-contain", "query-contains")
ANSWER_ASSERTIONS = ("contains", "icontains", "not-contains", "regex", "numeric", "llm-judge")
CURATOR_ASSERTIONS = ("links-f1",)
EXTRACT_ASSERTIONS = ("fields-match",)
COMMON_ASSERTIONS = ("latency", "tokens")
AssertionType = Literal[
    "execution-match",
    "valid-query",
    "refusal",
    "max-repairs",
    "rows-contain",
    "query-contains",
    "contains",
    "icontains",
    "not-contains",
    "regex",
    "numeric",
    "llm-judge",
    "links-f1",
    "fields-match",
    "latency",
    "tokens",
]
ALLOWED: dict[str, tuple[str, ...]] = {
    "nl2ql": NL2QL_ASSERTIONS + COMMON_ASSERTIONS,
    "assistant": ANSWER_ASSERTIONS + COMMON_ASSERTIONS,
    "curator": CURATOR_ASSERTIONS + COMMON_ASSERTIONS,
    "extract": EXTRACT_ASSERTIONS + COMMON_ASSERTIONS,
}
# Assertions that need a `value`; the others take theirs from `expected` or need none.
NEEDS_VALUE = {"contains", "icontains", "not-contains", "regex", "numeric", "llm-judge", "max-repairs"}
NEEDS_VALUE |= {"rows-contain", "query-contains", "latency", "tokens"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Assertion(_Strict):
    """One check on a case's output. `threshold` is the score at or above which a graded
    assertion passes (llm-judge, links-f1); `weight` is its share of the case's score."""

    type: AssertionType
    value: Any = None
    threshold: float | None = Field(None, ge=0, le=1)
    weight: float = Field(1.0, gt=0)
    tolerance: float | None = Field(None, ge=0, description="numeric: absolute difference still counted right")
    order: Literal["auto", "strict", "ignore", "question"] = Field(
        "auto",
        description="execution-match: compare rows in order (strict), as sets (ignore), strict only when the gold "
        "query orders (auto), or strict only when the question asks for an order or the case is tagged order_by "
        "(question: sql-eval's rule)",
    )
    column_order: Literal["strict", "ignore"] = Field(
        "ignore",
        description="execution-match: whether the predicted columns may come in another order (rows reach "
        "users as JSON objects keyed by column, so by default they may)",
    )
    extra_columns: bool = Field(
        False,
        description="execution-match: also pass predicted rows with more columns than the gold's when every "
        "gold column is among them (sql-eval's subset match)",
    )

    @model_validator(mode="after")
    def _check(self) -> Assertion:
        if self.type in NEEDS_VALUE and self.value is None:
            raise ValueError(f"assertion {self.type!r} needs a `value`")
        if self.tolerance is not None and self.type != "numeric":
            raise ValueError("`tolerance` only applies to `numeric` assertions")
        if self.type == "numeric" and not isinstance(self.value, int | float):
            raise ValueError("assertion 'numeric' needs a number as `value`")
        if self.type == "regex":
            import re

            try:
                re.compile(str(self.value))
            except re.error as exc:
                raise ValueError(f"assertion 'regex': bad pattern: {exc}") from None
        if self.type == "rows-contain" and not isinstance(self.value, list):
            raise ValueError("assertion 'rows-contain' needs a list of values")
        return self


class GoldLink(_Strict):
    origin: str = Field(pattern=r"^[^/]+/[^.]+\.[^.]+$", description="namespace/dataset.field")
    destination: str = Field(pattern=r"^[^/]+/[^.]+\.[^.]+$")
    match_type: MatchType | None = Field(None, alias="matchType")


class GoldStep(_Strict):
    instruction: str
    query: str


class Expected(_Strict):
    query: str | None = None  # nl2ql: the gold query; assistant: the single step's query
    # nl2ql: other queries whose rows are as right (sql-eval's `{a, b}`: either column will do)
    alternatives: list[str] = Field(default_factory=list)
    answer: str | None = None  # assistant: a reference answer (also what the scripted oracle says)
    refuse: bool = False
    steps: list[GoldStep] = Field(default_factory=list)  # assistant: a gold plan
    links: list[GoldLink] = Field(default_factory=list)  # curator
    rows: list[dict[str, Any]] = Field(default_factory=list)  # extract: the rows the file holds
    key: str | None = None  # extract: the field that tells rows apart (else rows are paired by likeness)


class Vars(_Strict):
    question: str = ""
    namespace: str | None = None  # a fixture's namespace; default: the suite's first fixture's
    dataset: str | None = None  # curator: curate only this dataset
    helper_prompt: str | None = None
    file: str | None = None  # extract: the file to ingest, beside the suite
    fields: dict[str, str] = Field(default_factory=dict)  # extract: the dataset's schema, field -> description
    data_description: str = ""  # extract: the dataset's description


class Case(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    vars: Vars
    expected: Expected = Field(default_factory=Expected)
    assert_: list[Assertion] = Field(default_factory=list, alias="assert")
    tags: list[str] = Field(default_factory=list)
    difficulty: Difficulty = "medium"


class Defaults(_Strict):
    assert_: list[Assertion] = Field(default_factory=list, alias="assert")
    tags: list[str] = Field(default_factory=list)


class Suite(_Strict):
    name: str
    description: str = ""
    kind: Kind
    fixtures: list[str] = Field(default_factory=list)
    links: bool = Field(True, description="activate the fixtures' links (curator suites turn this off)")
    threshold: float = Field(0.0, ge=0, le=1, description="the run fails when the pass rate is below this")
    extra_columns: bool = Field(
        False, description="the implied execution-match allows extra columns (see Assertion.extra_columns)"
    )
    order: Literal["auto", "question"] = Field("auto", description="the implied execution-match's `order`")
    held_out: bool = Field(
        False,
        description="the suite decides and is never read case by case: its reports and comparisons show totals, "
        "tags and failure kinds, not cases (report.json still holds them, for re-scoring)",
    )
    defaults: Defaults = Field(default_factory=Defaults)
    cases: list[Case] = Field(default_factory=list)
    cases_files: list[str] = Field(default_factory=list)
    # Where the suite was read from; fixtures and case files resolve against it.
    path: Path | None = Field(None, exclude=True)

    @field_validator("fixtures")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("a fixture is listed twice")
        return value

    def assertions(self, case: Case) -> list[Assertion]:
        """The case's assertions: the suite defaults, then its own, or the kind's implied check."""
        own = case.assert_ or implied_assertions(self.kind, case, extra_columns=self.extra_columns, order=self.order)
        return [*self.defaults.assert_, *own]

    def tags(self, case: Case) -> list[str]:
        return sorted({*self.defaults.tags, *case.tags})

    def case(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)


def implied_assertions(
    kind: str, case: Case, *, extra_columns: bool = False, order: Literal["auto", "question"] = "auto"
) -> list[Assertion]:
    """What a case is checked for when it lists no assertions of its own."""
    if kind == "nl2ql" and case.expected.refuse:
        return [Assertion(type="refusal")]
    if kind == "nl2ql" and case.expected.query:
        return [Assertion(type="execution-match", extra_columns=extra_columns, order=order)]
    if kind == "curator":
        return [Assertion(type="links-f1")]
    if kind == "extract":
        return [Assertion(type="fields-match")]
    return []


class SuiteError(ValueError):
    """A suite file that cannot be used; the message names each problem and where it is."""


def format_validation_error(error: ValidationError, where: str, what: str = "suite") -> str:
    """One line per problem, naming where it is; unknown keys are said to be unknown."""
    lines = []
    for item in error.errors():
        location = ".".join(str(p) for p in item["loc"]) or "(top level)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = f"unknown key {item['loc'][-1]!r}"
        lines.append(f"  {location}: {message}")
    return f"{where} is not a valid {what}:\n" + "\n".join(lines)


def _read_cases_file(path: Path) -> list[dict[str, Any]]:
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{path}:{number}: not JSON: {exc.msg}") from None
        if not isinstance(item, dict):
            raise SuiteError(f"{path}:{number}: each line must be a JSON object (one case)")
        cases.append(item)
    return cases


def parse_suite(data: Any, where: str, path: Path | None = None) -> Suite:
    if not isinstance(data, dict):
        raise SuiteError(f"{where} is not a valid suite: the top level must be a mapping")
    data = dict(data)
    base = path.parent if path else Path.cwd()
    bulk: list[dict[str, Any]] = []
    for name in data.get("cases_files") or []:
        file = base / str(name)
        if not file.is_file():
            raise SuiteError(f"{where}: cases file {name!r} does not exist")
        bulk.extend(_read_cases_file(file))
    data["cases"] = [*(data.get("cases") or []), *bulk]
    try:
        suite = Suite.model_validate({**data, "path": path})
    except ValidationError as exc:
        raise SuiteError(format_validation_error(exc, where)) from None
    problems = _cross_check(suite)
    if problems:
        raise SuiteError(f"{where} is not a valid suite:\n" + "\n".join(f"  {p}" for p in problems))
    return suite


def _cross_check(suite: Suite) -> list[str]:
    """Rules that span fields: unique ids, assertions that fit the kind, gold values present."""
    problems: list[str] = []
    seen: set[str] = set()
    allowed = ALLOWED[suite.kind]
    for index, case in enumerate(suite.cases):
        where = f"cases.{index} ({case.id})"
        if case.id in seen:
            problems.append(f"{where}: duplicate case id")
        seen.add(case.id)
        if suite.kind == "extract":
            problems.extend(_extract_problems(suite, case, where))
        elif suite.kind != "curator" and not case.vars.question:
            problems.append(f"{where}: vars.question is required")
        for assertion in suite.assertions(case):
            if assertion.type not in allowed:
                problems.append(f"{where}: assertion {assertion.type!r} does not apply to a {suite.kind} suite")
            if assertion.type == "execution-match" and assertion.value is None and not case.expected.query:
                problems.append(f"{where}: execution-match needs a `value` or expected.query")
            if assertion.type == "links-f1" and not case.expected.links:
                problems.append(f"{where}: links-f1 needs expected.links")
        if not suite.assertions(case):
            problems.append(f"{where}: no assertions (give `assert`, or expected.query / expected.refuse)")
        if case.vars.namespace is not None and case.vars.namespace not in suite.fixtures:
            problems.append(f"{where}: vars.namespace {case.vars.namespace!r} is not one of the suite's fixtures")
    if not suite.cases:
        problems.append("cases: the suite has no cases")
    if not suite.fixtures and suite.kind != "extract":
        problems.append("fixtures: a suite of this kind needs at least one fixture")
    return problems


def _extract_problems(suite: Suite, case: Case, where: str) -> list[str]:
    problems = []
    if not case.vars.file:
        problems.append(f"{where}: vars.file is required")
    elif suite.path is not None and not (suite.path.parent / case.vars.file).is_file():
        problems.append(f"{where}: vars.file {case.vars.file!r} does not exist beside the suite")
    if not case.vars.fields:
        problems.append(f"{where}: vars.fields (the dataset's schema) is required")
    if not case.expected.rows:
        problems.append(f"{where}: expected.rows is required")
    unknown = {name for row in case.expected.rows for name in row} - set(case.vars.fields)
    if unknown:
        problems.append(f"{where}: expected.rows name fields not in vars.fields: {sorted(unknown)}")
    if case.expected.key is not None and case.expected.key not in case.vars.fields:
        problems.append(f"{where}: expected.key {case.expected.key!r} is not one of vars.fields")
    return problems


def resolve_suite_path(name: str | Path) -> Path:
    """A suite by path, or by the name of a bundled suite: `nl2ql` -> suites/nl2ql.yaml, or
    for a suite that keeps its fixtures and provenance in a folder, `dev` -> suites/dev/dev.yaml."""
    path = Path(name)
    if path.is_file():
        return path
    for bundled in (SUITES_DIR / f"{name}.yaml", SUITES_DIR / str(name) / f"{name}.yaml"):
        if bundled.is_file():
            return bundled
    known = ", ".join(p.stem for p in bundled_suites())
    raise SuiteError(f"no suite file {str(name)!r} (bundled suites: {known})")


def load_suite(name: str | Path) -> Suite:
    path = resolve_suite_path(name)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SuiteError(f"{path}: not YAML: {exc}") from None
    return parse_suite(data, str(path), path.resolve())


def bundled_suites() -> list[Path]:
    folders = (folder / f"{folder.name}.yaml" for folder in SUITES_DIR.iterdir() if folder.is_dir())
    return sorted([*SUITES_DIR.glob("*.yaml"), *(path for path in folders if path.is_file())], key=lambda p: p.stem)
