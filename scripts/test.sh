#!/usr/bin/env bash
# Run every test: SQL lint, then pytest (unit, property, dbt build + dbt unit tests, Spark end to
# end, local S3 server, branch checks with a real Airflow and a real headless Chromium).
# Sets up what it needs first; extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

# The checks page is tested in Debian's Chromium (no browser downloads).
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing Debian chromium for the browser test" >&2
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "chromium is missing and cannot be installed here (need root + apt-get)" >&2
        exit 1
    fi
fi

# The checks state store is tested on PostgreSQL too: a throwaway cluster from Debian's server
# binaries (initdb, pg_ctl under /usr/lib/postgresql/*/bin), started by the tests on 127.0.0.1.
if ! compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing Debian postgresql for the state store tests" >&2
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else
        echo "postgresql is missing and cannot be installed here (need root + apt-get)" >&2
        exit 1
    fi
fi

export LAKEWARDEN_HOME="${LAKEWARDEN_TEST_HOME:-$PWD/.lakewarden-test}"
echo "== sqlfluff lint models tests" >&2
.venv/bin/sqlfluff lint models tests --processes 1

echo "== pytest" >&2
# pytest exits 5 when it collects no test: set -e turns that into a failure too.
.venv/bin/pytest "$@"
