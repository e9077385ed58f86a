#!/usr/bin/env bash
# Create .venv-airflow (repository root) holding apache-airflow, for the branch-checks Airflow test.
#
# Airflow pins hundreds of packages; keeping it in its own venv means those pins never touch the
# project's venv. Idempotent: a venv that already holds the wanted version is left alone, and a
# half-finished install (no marker file) is redone from scratch.
set -euo pipefail

AIRFLOW_VERSION="${AIRFLOW_VERSION:-3.3.2}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${AIRFLOW_VENV:-$root/.venv-airflow}"
python="${PYTHON:-python3}"
marker="$venv/.lakewarden-airflow-$AIRFLOW_VERSION"

if [[ -f "$marker" && -x "$venv/bin/airflow" ]]; then
    echo "setup-airflow: $venv already has apache-airflow $AIRFLOW_VERSION"
    exit 0
fi

rm -rf "$venv"
# Created and installed by scripts/venv-install.sh (uv: with warm caches on 2 cores, 22 s with
# pip against 5 s). Byte-compiled as it is installed (--compile-bytecode, unlike setup.sh),
# where the Airflow processes will look for it (uv honours PYTHONPYCACHEPREFIX, which
# scripts/test.sh sets): the Airflow test starts four Airflow processes (db migrate,
# api-server, scheduler, dag-processor) that import much of it, and started side by side they
# compiled the same modules each.
PYTHON="$python" bash "$root/scripts/venv-install.sh" "$venv/bin/python" --compile-bytecode "apache-airflow==$AIRFLOW_VERSION"
"$venv/bin/python" -c "import airflow, sys; sys.exit(airflow.__version__ != '$AIRFLOW_VERSION')"
touch "$marker"
echo "setup-airflow: installed apache-airflow $AIRFLOW_VERSION into $venv"
