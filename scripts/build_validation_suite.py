"""Builds the held-out validation suite (datawell/evals/suites/validation/) from defog's data.

Run once by hand; its output is committed. Inputs, both read from git at a pinned commit:
- defog-ai/defog-data (`DEFOG_DATA_COMMIT`): the databases `broker`, `car_dealership`,
  `derm_treatment` and `ewallet` only (`<db>.sql` and `<db>.json`); no other database of the
  repository is opened;
- defog-ai/sql-eval (`SQL_EVAL_COMMIT`): `data/instruct_basic_postgres.csv` and
  `data/instruct_advanced_postgres.csv`, filtered by `db_name` to those four databases before
  any question is read;
- `--postgres URL` (required): a PostgreSQL server where the dumps are loaded into scratch
  databases with `psql`. The dumps write many values relative to today (`CURRENT_DATE -
  INTERVAL '5 days'`); they are loaded with today pinned to `TODAY`, so the fixtures are the
  same on every run. The fixtures' CSVs are read back from those databases, and sql-eval's
  own gold queries are run there to record what the translations must return
  (`sql_eval_gold.jsonl`, compared by tests/evals/test_validation_suite.py).

The gold translations to the QL are in `validation_translations.py` (and `_advanced.py`) beside this script
(sql-eval's `{a, b}` notation expanded as in build_dev_suite.py).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import psycopg
import yaml
from build_dev_suite import Translation, _json, _with_db, expand
from validation_translations import DIFFICULTY, LEFT_OUT, TIES, TRANSLATIONS

DATABASES = ("broker", "car_dealership", "derm_treatment", "ewallet")
DEFOG_DATA_COMMIT = "856295d8f0aa8a0b0fb71b9623e86f363469797a"
SQL_EVAL_COMMIT = "b83332416ea2d424b0cd12994a0a9ba100f4b4af"
QUESTION_FILES = ("data/instruct_basic_postgres.csv", "data/instruct_advanced_postgres.csv")
TODAY = "2025-08-15"
SUITE = Path(__file__).resolve().parent.parent / "datawell" / "evals" / "suites" / "validation"
SCHEMAS = {"ewallet": "consumer_div"}
TYPES = {
    "bigint": "integer",
    "integer": "integer",
    "smallint": "integer",
    "numeric": "real",
    "double precision": "real",
    "real": "real",
    "boolean": "boolean",
    "date": "timestamp",
    "timestamp without time zone": "timestamp",
    "timestamp with time zone": "timestamp",
    "text": "text",
    "character varying": "text",
    "character": "text",
}


def git_show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def pinned(sql: str) -> str:
    """The SQL with today pinned: `CURRENT_DATE`, `CURRENT_TIMESTAMP` and `NOW()` as literals."""
    sql = re.sub(r"\bCURRENT_DATE\b", f"DATE '{TODAY}'", sql, flags=re.IGNORECASE)
    sql = re.sub(r"\bCURRENT_TIMESTAMP\b", f"TIMESTAMP '{TODAY} 00:00:00'", sql, flags=re.IGNORECASE)
    return re.sub(r"\bNOW\(\)", f"TIMESTAMP '{TODAY} 00:00:00'", sql, flags=re.IGNORECASE)


def questions(repo: Path) -> list[dict[str, str]]:
    """sql-eval's rows of the four databases (basic file, then advanced), filtered by db_name
    before anything else."""
    found = []
    for path in QUESTION_FILES:
        rows = csv.DictReader(io.StringIO(git_show(repo, SQL_EVAL_COMMIT, path)))
        found += [{**row, "file": path} for row in rows if row["db_name"] in DATABASES]
    return found


def load_dumps(url: str, repo: Path) -> None:
    for database in DATABASES:
        scratch = f"validation_{database}"
        with psycopg.connect(_with_db(url, "postgres"), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {scratch}")
            conn.execute(f"CREATE DATABASE {scratch}")
        dump = pinned(git_show(repo, DEFOG_DATA_COMMIT, f"defog_data/{database}/{database}.sql"))
        subprocess.run(
            ["psql", "-q", "-v", "ON_ERROR_STOP=1", "-d", _with_db(url, scratch)],
            input=dump,
            check=True,
            capture_output=True,
            text=True,
        )


def write_fixture(url: str, repo: Path, database: str) -> dict[str, int]:
    """One fixture folder per database: a CSV per non-empty table (read back from the loaded
    dump) and fixture.yaml. Names are PostgreSQL's: the dumps' unquoted `sbCustomer` is
    `sbcustomer` there, and sql-eval's gold rows carry those names."""
    meta = json.loads(git_show(repo, DEFOG_DATA_COMMIT, f"defog_data/{database}/{database}.json"))
    schema = SCHEMAS.get(database, "public")
    folder = SUITE / "fixtures" / database
    folder.mkdir(parents=True, exist_ok=True)
    specs: dict[str, Any] = {}
    counts = {}
    with psycopg.connect(_with_db(url, f"validation_{database}")) as conn:
        for qualified, columns in meta["table_metadata"].items():
            table = qualified.split(".")[-1].lower()
            described = {c["column_name"].lower(): c for c in columns}
            types = dict(
                conn.execute(
                    "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s "
                    "AND table_name = %s ORDER BY ordinal_position",
                    (schema, table),
                ).fetchall()
            )
            names = list(types)
            rows = conn.execute(f"SELECT * FROM {schema}.{table} ORDER BY 1").fetchall()
            if not rows:
                continue
            with (folder / f"{table}.csv").open("w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle)
                writer.writerow(names)
                writer.writerows([_cell(v) for v in row] for row in rows)
            specs[table] = {
                "description": f"The {table} table of the {database} database.",
                "file": f"{table}.csv",
                "fields": {
                    n: {"type": TYPES[types[n]], "description": described.get(n, {}).get("column_description", "")}
                    for n in names
                },
            }
            counts[table] = len(rows)
    glossary = meta.get("glossary", "").strip()
    fixture = {
        "description": f"defog-data's {database} database (commit {DEFOG_DATA_COMMIT[:12]}, today pinned to {TODAY})."
        + (f" Notes from defog-data:\n{glossary}" if glossary else ""),
        "datasets": specs,
    }
    (folder / "fixture.yaml").write_text(yaml.safe_dump(fixture, sort_keys=False, width=120), encoding="utf-8")
    return counts


def _value(value: Any) -> Any:
    """A cell of sql-eval's result as the QL returns the same value: a date or timestamp as an
    ISO timestamp in UTC (the fixtures hold dates as timestamps at midnight UTC)."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).isoformat()
    return _json(value)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(_json(value))


def case_of(row: dict[str, str], translation: Translation, number: int) -> dict[str, Any]:
    question = row["question"].strip()
    if row.get("instructions", "").strip():
        question += "\n\nInstructions: " + row["instructions"].strip()
    gold, *subsets = expand(translation.ql)
    alternatives = subsets + [q for more in translation.more for q in expand(more)]
    category = row["query_category"]
    case_id = f"{row['db_name']}-{number:02d}"
    return {
        "id": case_id,
        "description": f"sql-eval {row['file'].split('/')[-1]}, {row['db_name']} question {number} ({category})",
        "vars": {"question": question, "namespace": row["db_name"]},
        "expected": {"query": gold, **({"alternatives": alternatives} if alternatives else {})},
        **(
            {"assert": [{"type": "execution-match", "order": "ignore", "extra_columns": True}]}
            if case_id in TIES
            else {}
        ),
        "tags": [category],
        "difficulty": DIFFICULTY[category],
    }


def sql_eval_gold(url: str, row: dict[str, str], case_id: str, translation: Translation) -> dict[str, Any]:
    """What sql-eval's gold (the chosen variant, every `{}` column) returns on the loaded dump."""
    if translation.unchecked:
        return {"id": case_id, "unchecked": translation.unchecked}
    variants = [q.strip() for q in row["query"].split(";") if q.strip()]
    query = expand(variants[translation.variant])[0]
    with psycopg.connect(_with_db(url, f"validation_{row['db_name']}")) as conn:
        conn.execute(f"SET search_path TO {SCHEMAS.get(row['db_name'], 'public')}, public")
        cursor = conn.execute(pinned(query))
        names = [d.name for d in cursor.description or []]
        result = [dict(zip(names, [_value(v) for v in values], strict=True)) for values in cursor.fetchall()]
    return {"id": case_id, "query": query, "rows": result}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--defog-data", type=Path, default=Path("/work/.mirror/defog-ai+defog-data/repo"))
    parser.add_argument("--sql-eval", type=Path, default=Path("/work/.mirror/defog-ai+sql-eval/repo"))
    parser.add_argument("--postgres", required=True, help="a PostgreSQL URL to load the dumps into")
    args = parser.parse_args()
    rows = questions(args.sql_eval)
    numbers: dict[str, int] = {}
    cases, gold = [], []
    load_dumps(args.postgres, args.defog_data)
    for database in DATABASES:
        print(database, write_fixture(args.postgres, args.defog_data, database))
    for row in rows:
        numbers[row["db_name"]] = number = numbers.get(row["db_name"], 0) + 1
        case_id = f"{row['db_name']}-{number:02d}"
        if case_id in LEFT_OUT:
            continue
        if case_id not in TRANSLATIONS:
            print(f"no translation for {case_id}", file=sys.stderr)
            return 1
        cases.append(case_of(row, TRANSLATIONS[case_id], number))
        gold.append(sql_eval_gold(args.postgres, row, case_id, TRANSLATIONS[case_id]))
    with (SUITE / "cases.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)
    with (SUITE / "sql_eval_gold.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(item, ensure_ascii=False) + "\n" for item in gold)
    print(f"{len(cases)} cases, {len(LEFT_OUT)} left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
