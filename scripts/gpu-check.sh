#!/usr/bin/env bash
# Checks a GPU machine end to end (#31): `prepare` here packs what it lacks into .gpu/ pieces (at most 56 MiB each),
# `run PART` there installs them and runs the part. Parts and usage: scripts/gpu_check.py.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/gpu_check.py "$@"
