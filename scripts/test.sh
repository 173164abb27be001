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
exec .venv/bin/pytest "$@"
