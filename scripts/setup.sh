#!/usr/bin/env bash
# Create .venv (Python 3.11) with lakewarden, dbt + Spark and the test tools, pinned by
# constraints.txt (the one lock file). Idempotent: a second run only checks the pins.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
    for candidate in python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1; then PYTHON="$candidate"; break; fi
    done
fi
version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [ "$version" != "3.11" ]; then
    echo "lakewarden needs Python 3.11 (found $PYTHON = $version); set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
if ! command -v java >/dev/null 2>&1; then
    echo "lakewarden needs Java 17 on PATH for the embedded Spark" >&2
    exit 1
fi

if [ ! -x .venv/bin/python ]; then
    echo "creating .venv with $PYTHON" >&2
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade "pip>=24"
echo "installing lakewarden and its pinned dependencies (first run: a few minutes, pyspark is large)" >&2
.venv/bin/python -m pip install --quiet --constraint constraints.txt --editable ".[test]"
