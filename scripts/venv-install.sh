#!/usr/bin/env bash
# Install packages into a venv, as `pip install ARGS...` would, with uv:
#     scripts/venv-install.sh VENV_PYTHON ARGS...    (ARGS: uv pip install's, e.g. --constraint F pkg)
# VENV_PYTHON is the venv's bin/python; a venv not there yet is created first, with $PYTHON
# (default python3.11). uv is the one pinned in constraints.txt, which scripts/setup.sh installs
# into .venv first ($UV names another): no caller needs uv itself.
#
# From uv's cache first, with no network round trip; from the index when the cache lacks
# something (a first install on a machine, a pin changed). Why: every install here is pinned
# (constraints.txt) or was resolved before, so what the cache holds is what the index would
# send, and the round trips were the install's time. Measured on 2 cores with warm caches: the
# project's venv 28 s with pip against 2 s; the wheel's venv in test_wheel.py 26 s against 0.7 s;
# Airflow's venv 22 s against 5 s (pip revalidates every package; behind a proxy that strips
# caching headers, uv online downloaded pyspark's 456 MB sdist and built it again each time).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
uv="${UV:-$root/.venv/bin/uv}"
if [ "$#" -lt 2 ]; then
    echo "usage: scripts/venv-install.sh VENV_PYTHON ARGS... (uv pip install's arguments)" >&2
    exit 2
fi
if [ ! -x "$uv" ]; then
    echo "scripts/venv-install.sh: no uv at $uv: run scripts/setup.sh first (it installs uv into .venv), or set UV" >&2
    exit 1
fi
python="$1"
shift
if [ ! -x "$python" ]; then
    "$uv" venv --quiet --python "${PYTHON:-python3.11}" "$(dirname "$(dirname "$python")")"
fi
# the cache only: fails (installing nothing) when it lacks a package or a page; then the index
if "$uv" pip install --quiet --offline --python "$python" "$@" 2>/dev/null; then
    exit 0
fi
exec "$uv" pip install --quiet --python "$python" "$@"
