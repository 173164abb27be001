#!/usr/bin/env bash
# Set everything up and run the whole test suite. Tests that need PostgreSQL run when
# DATAWELL_TEST_POSTGRES_URL names a server (.ci/run starts one); the rest never need one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
.venv/bin/ruff check .
.venv/bin/mypy datawell
.venv/bin/lint-imports  # imports point down only: docs/architecture.md
# Two workers (pytest-xdist), each test file whole on one of them: its module-scoped servers
# start once. DATAWELL_TEST_WORKERS=0 runs in one process; `.venv/bin/pytest FILE` never uses xdist.
.venv/bin/pytest -n "${DATAWELL_TEST_WORKERS:-2}" --dist loadfile -m "not embedded_model" "$@"
# The real embedded model takes every core for half a minute: it runs alone, after the rest, so
# no timed test runs beside it. Exit status 5 is "no test selected" (arguments without it).
.venv/bin/pytest -m embedded_model "$@" || [ $? = 5 ]
