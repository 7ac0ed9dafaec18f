#!/usr/bin/env bash
# Installs what is missing, then runs every test: type check, OpenAPI freshness, vitest, the core's pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
pnpm --silent typecheck
pnpm --silent test
if [ -f core/pyproject.toml ]; then
  (cd core && uv run --frozen pytest -q)
fi
