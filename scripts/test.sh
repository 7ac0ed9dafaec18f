#!/usr/bin/env bash
# Installs what is missing, then runs every test: type check, OpenAPI freshness, vitest, the core's pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# The dashboard test drives Debian's Chromium (no browser download); install it when missing.
if ! command -v chromium >/dev/null 2>&1; then
  echo "test: installing chromium (Debian package)" >&2
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
fi
pnpm --silent typecheck
pnpm --silent test
if [ -f core/pyproject.toml ]; then
  (cd core && uv run --frozen pytest -q)
fi
