#!/usr/bin/env bash
# Starts the whole stack on the embedded default: one Node process, PGlite + blobs under DATA_DIR (./data).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec pnpm --silent start
