#!/usr/bin/env bash
# Installs what is missing, then runs every test: type check, OpenAPI freshness, vitest, the core's pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# From Debian's packages, installed when missing: Chromium (the dashboard test drives it, no browser download),
# PostgreSQL and Redis (the scaled-out drivers are tested against the real servers, started by the tests), Go.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# bubblewrap sandboxes the python graders' user code (core/src/ftcore/sandbox.py); the core's tests try its limits.
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# Prometheus scrapes the stack's /metrics in test/metrics.test.ts (its own process on a free port, not the service).
[ -x /usr/bin/prometheus ] || missing+=(prometheus)
# README.md's scaled-out recipe runs as written in namespaces of its own (test/scaling-out-readme.test.ts): sudo (as the
# postgres user), ip and ss (iproute2), pkill (procps), openssl and curl, as its lines use them.
command -v sudo >/dev/null 2>&1 || missing+=(sudo)
command -v ip >/dev/null 2>&1 && command -v ss >/dev/null 2>&1 || missing+=(iproute2)
command -v pkill >/dev/null 2>&1 || missing+=(procps)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v curl >/dev/null 2>&1 || missing+=(curl)
# Go renders Ollama Modelfile templates as Ollama does (test/tools/ollama-template, standard library only).
[ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || missing+=(golang-go)
if [ ${#missing[@]} -gt 0 ]; then
  echo "test: installing ${missing[*]} (Debian packages)" >&2
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi
pnpm --silent typecheck
pnpm --silent test
if [ -f core/pyproject.toml ]; then
  (cd core && uv run --frozen pytest -q)
fi
