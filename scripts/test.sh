#!/usr/bin/env bash
# Installs what is missing, then runs every test: type check, OpenAPI freshness, vitest, the core's pytest.
# `--fast` (also `pnpm test:fast`): the type check, vitest's unit tier and the core's `pytest -m "not slow"`: no test
# that starts a process or listens on a port, no training (README "Contributing": 5 minutes; the whole suite 30).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=false
case "${1:-}" in
  --fast) fast=true ;;
  "") ;;
  *) echo "usage: bash scripts/test.sh [--fast]" >&2; exit 2 ;;
esac
bash scripts/bootstrap.sh
# From Debian's packages, installed when missing: Chromium (the dashboard test drives it, no browser download),
# PostgreSQL and Redis (the scaled-out drivers are tested against the real servers, started by the tests), Go.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# bubblewrap sandboxes the python graders' user code (core/src/ftcore/evaluation/sandbox.py); the core's tests try its limits.
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
# The core's pytest runs beside the type check and vitest, its output kept until they end: run one after the other,
# each left a CPU idle for much of its time (README "Contributing").
if $fast; then vitest=(vitest run --project unit); pytest=(-m "not slow"); else vitest=(vitest run); pytest=(); fi
pytest_log=$(mktemp -t ftp-pytest-XXXXXX.log)
# --durations: the slowest core tests are printed with the log, as vitest prints its slow ones (where CI minutes go).
(cd core && exec uv run --frozen pytest -q --durations=25 "${pytest[@]}") >"$pytest_log" 2>&1 &
pytest_pid=$!
status=0
pnpm --silent typecheck && pnpm --silent "${vitest[@]}" || status=$?
pytest_status=0
wait "$pytest_pid" || pytest_status=$?
echo "--- the core's pytest (core/) ---"
cat "$pytest_log"
rm -f "$pytest_log"
[ "$status" -ne 0 ] && exit "$status"
exit "$pytest_status"
