#!/usr/bin/env bash
# Create .venv (Python 3.11) with lakewarden, dbt + Spark and the test tools, pinned by
# constraints.txt (the one lock file). Idempotent: a second run only checks the pins.
set -euo pipefail
cd "$(dirname "$0")/.."
# --no-warm-up: skip the last step (the JVM class archive); scripts/test.sh passes it, its first
# job process to end keeps the archive instead
warm_up=1
for argument in "$@"; do
    case "$argument" in
        --no-warm-up) warm_up=0 ;;
        *) echo "scripts/setup.sh: unknown argument $argument (only --no-warm-up)" >&2; exit 2 ;;
    esac
done

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
# the embedded Spark takes the newest supported runtime found (python/lakewarden/runtime/java_runtime.py)
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ] && ! compgen -G "/usr/lib/jvm/*/bin/java" >/dev/null; then
    echo "lakewarden needs Java 17, 21 or 25 (25.0.3 or later) for the embedded Spark: on PATH, in JAVA_HOME or under /usr/lib/jvm" >&2
    exit 1
fi

if [ ! -x .venv/bin/python ]; then
    echo "creating .venv with $PYTHON" >&2
    "$PYTHON" -m venv .venv
fi
# uv installs (scripts/venv-install.sh says why); itself pinned in constraints.txt, by the pip
# the venv came with (from pip's cache: about 2 s)
if ! .venv/bin/uv --version 2>/dev/null | grep -qx "uv $(sed -n 's/^uv==//p' constraints.txt)"; then
    .venv/bin/python -m pip install --quiet --constraint constraints.txt uv
fi
echo "installing lakewarden and its pinned dependencies (first run: a few minutes, pyspark is large)" >&2
# Not byte-compiled up front (uv's default; pip's --no-compile): compiling every installed
# module (pyspark's, dbt's, ...) took 16 s of a 38 s pip install on 2 cores; Python compiles
# the ones a process imports, once, when it first imports them (the venv is writable), and most
# are never imported. Where PYTHONDONTWRITEBYTECODE is set, no process keeps what it compiled:
# the warm-up below then keeps it for them. pip itself is kept current for the user's own
# `.venv/bin/pip install`.
bash scripts/venv-install.sh .venv/bin/python --constraint constraints.txt --editable ".[test]" "pip>=24"

# The embedded JVM's class archive, once per machine and Spark/Java version (a few seconds'
# faster start for every job after): kept now, at install, rather than at the end of the
# user's first command (the demo took 57 s with it to keep, 27 s without). Already kept: no job.
# It also keeps the compiled bytecode of what every command imports (lakewarden, dbt,
# pyspark), even where PYTHONDONTWRITEBYTECODE is set (some shells and CI images set it; it
# stops writing, not reading): each later command then imports in 1.7 s instead of compiling
# again for 3.3-3.6 s (2 cores).
if [ "$warm_up" = 1 ]; then
    .venv/bin/lakewarden warm-up
fi
