#!/usr/bin/env bash
# Set everything up and run the service with its embedded defaults: SQLite and a local
# data folder (.datawell/), the embedded model, no key, no network.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/datawell users list | grep -qx demo || {
    .venv/bin/datawell users create demo
    echo "A token for user 'demo' (send it as 'Authorization: Bearer <token>'):"
    .venv/bin/datawell token issue demo --description "created by scripts/serve.sh"
}
exec .venv/bin/datawell serve "$@"
