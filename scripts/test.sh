#!/usr/bin/env bash
# Run every test: Python and SQL lint, then pytest (unit, property, dbt build + dbt unit tests,
# Spark end to end, local S3 server, branch checks with a real Airflow and a real headless
# Chromium).
# Sets up what it needs first. Extra arguments go to each pytest step below; a -m of yours is
# combined with each step's own selection.
set -euo pipefail
cd "$(dirname "$0")/.."

# Start a command in the background, in a process group of its own (set -m), its pid in
# $started_pid; the caller's redirections apply to it. Without the group, a command a script
# starts in the background ignores SIGINT, and pytest would not stop when stop_behind (below)
# asks it to; a group also stops as one (npm under Azurite's install).
start_in_own_group() {
    set -m
    "$@" &
    started_pid=$!
    set +m
}
# A command run behind the current step: its output goes to a file, printed by `joined` when
# it is done (the step in front keeps its own output readable). One at a time; its input is
# /dev/null.
behind() {
    behind_log="$(mktemp "${TMPDIR:-/tmp}/lakewarden-tests.XXXXXX")"
    start_in_own_group "$@" >"$behind_log" 2>&1 </dev/null
    behind_pid=$started_pid
}
joined() {  # joined NAME: wait for the command behind, print its output; its exit status
    local status=0
    wait "$behind_pid" || status=$?
    behind_pid=""
    say "$1"
    cat "$behind_log"
    rm -f "$behind_log"
    return "$status"
}
# interrupted or failed: the pytest processes running behind stop as on Ctrl-C (pytest's fixtures
# stop what they started), sqlfluff, and Azurite's install (below) with its npm. A pytest process
# still running 10 s later (the interrupt reached a job run, which ends as interrupted, and the
# next test began) is stopped with its process group.
behind_pid=""
azurite_pid=""
sqlfluff_pid=""
others_pid=""
stop_behind() {
    local pids=() pid
    for pid in "$behind_pid" "$others_pid"; do
        [ -z "$pid" ] || ! kill -INT "$pid" 2>/dev/null || pids+=("$pid")
    done
    [ -z "$sqlfluff_pid" ] || kill "$sqlfluff_pid" 2>/dev/null || true
    [ -z "$azurite_pid" ] || kill -- "-$azurite_pid" 2>/dev/null || true
    rm -f "${sqlfluff_log:-}"
    if [ -n "${behind_log:-}" ] && [ -s "$behind_log" ]; then
        echo "test.sh: the output of the process behind, so far: $behind_log" >&2
    fi
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do
            running "$pid" || break
            sleep 0.2
        done
        ! running "$pid" || kill -TERM -- "-$pid" 2>/dev/null || true
    done
}
running() {  # whether process $1 runs (a zombie, ended but not yet waited for, does not)
    local state
    state="$(ps -o stat= -p "$1" 2>/dev/null)" && [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}
trap stop_behind EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Azurite (the store tests' Azure emulator, npm) installs beside the venv's install: npm waits
# on the network and its files (beside lint instead, where both cores are busy, the two took
# 86 s against lint's 44-50 s alone). Its own process group, so it stops as one, npm included.
azurite_log="$(mktemp "${TMPDIR:-/tmp}/lakewarden-azurite.XXXXXX")"
start_in_own_group bash scripts/setup-azurite.sh >"$azurite_log" 2>&1 </dev/null
azurite_pid=$started_pid

# --no-warm-up: the suite needs no JVM class archive, and keeps none on a fresh machine: its
# long-lived sessions never write one (python/tests/conftest.py), nor does an engine, and the
# other processes it starts end on bad input, are killed, start no JVM, or run with the cache off
# (test_spark_starter.py: keeping the archive took it 29 s instead of 7). The archive's own tests
# keep theirs apart.
bash scripts/setup.sh --no-warm-up
azurite_status=0
wait "$azurite_pid" || azurite_status=$?
azurite_pid=""
cat "$azurite_log" >&2
rm -f "$azurite_log"
[ "$azurite_status" -eq 0 ] || exit "$azurite_status"

# Compiled bytecode is kept: the suite starts hundreds of Python processes (pytest's, each job's
# subprocess, dbt, Spark's Python workers, the checks service), each importing pyspark, dbt and
# lakewarden; with PYTHONDONTWRITEBYTECODE set (some shells and CI images set it) every one of
# them compiled those modules from source again (setup.sh does not byte-compile what it
# installs, counting on the first import to compile them). Kept under .venv/pycache, not beside
# the sources.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$PWD/.venv/pycache}"

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
# Each step says when it starts: the log shows where the command's time goes.
say() { echo "== $* ($(date +%T))" >&2; }
say "ruff check python benchmarks"
.venv/bin/ruff check --quiet python benchmarks

say "lint-imports (the import contracts of pyproject.toml)"
.venv/bin/lint-imports --no-cache pyproject.toml >/dev/null || .venv/bin/lint-imports --no-cache pyproject.toml

# The caller's arguments: a -m is combined with each pytest step's own selection, the rest go
# to both pytest processes.
user_mark=""
args=()
while [ "$#" -gt 0 ]; do
    case "$1" in
        -m) user_mark="${2:?-m needs a marker expression}"; shift 2 ;;
        -m=*) user_mark="${1#-m=}"; shift ;;
        *) args+=("$1"); shift ;;
    esac
done
selection() {  # this step's markers, and the caller's -m if any
    if [ -n "$user_mark" ]; then echo "($user_mark) and ($1)"; else echo "$1"; fi
}
ran=0
step() {
    local status=0
    "$@" || status=$?
    case "$status" in
        0) ran=1 ;;
        5) ;;
        *) return "$status" ;;
    esac
}

# mypy (~30 s without its cache) and sqlfluff (~40 s: it renders every model through dbt) each
# keep one core busy: side by side they take the longer one's time, not the sum. mypy is done
# first; the pytest processes (below) start then, so their start and collection (~9 s each) use
# the core it leaves idle for sqlfluff's last seconds, and their first test waits for sqlfluff
# (python/tests/conftest.py). The command fails if either linter does, and then stops them.
say "sqlfluff lint models tests, and beside it mypy (pyproject.toml's [tool.mypy])"
sqlfluff_log="$(mktemp "${TMPDIR:-/tmp}/lakewarden-sqlfluff.XXXXXX")"
.venv/bin/sqlfluff lint models tests --processes 1 >"$sqlfluff_log" 2>&1 &
sqlfluff_pid=$!
behind .venv/bin/mypy
mypy_status=0
joined "mypy's output" || mypy_status=$?
[ "$mypy_status" -eq 0 ] || exit "$mypy_status"

# pytest in two processes side by side: the tests on the embedded Spark session (marked
# embedded by python/tests/conftest.py: one driver JVM, warmed once) and every other test (the
# checks service, the wheel and the cluster, parsers, subprocess runs). One process left a core
# idle about half the time: the Spark tests spend most of theirs on one thread. The
# timing-sensitive tests (marked serial) run first in the first process, alone: the second
# runs its first test once they are done (the first creates the file $LAKEWARDEN_SERIAL_DONE
# names then), so they no longer pay a pytest process of their own.
# The first process's output is printed when both are done; the command fails if either does.
# pytest exits 5 when it selects no test: a selection (extra arguments) may leave a process
# empty, so 5 fails the command only when neither ran a test.
say "pytest: the serial tests alone, then the embedded Spark tests beside the others (the first's output follows)"
serial_done="$(mktemp -u "${TMPDIR:-/tmp}/lakewarden-serial-done.XXXXXX")"
# the first process runs its first test (a serial one) once sqlfluff has ended
export LAKEWARDEN_SERIAL_DONE="$serial_done"
behind env LAKEWARDEN_START_AFTER_PID="$sqlfluff_pid" .venv/bin/pytest -m "$(selection "serial or embedded")" "${args[@]}"
unset LAKEWARDEN_SERIAL_DONE
# the other starts now too and collects its tests beside the first; it runs its first test once
# the serial tests are done, or the first process has ended (python/tests/conftest.py)
# (its output printed as it comes)
start_in_own_group env LAKEWARDEN_START_AFTER="$serial_done" LAKEWARDEN_START_AFTER_PID="$behind_pid" \
    .venv/bin/pytest -m "$(selection "not serial and not embedded")" "${args[@]}" </dev/null
others_pid=$started_pid
sqlfluff_status=0
wait "$sqlfluff_pid" || sqlfluff_status=$?
sqlfluff_pid=""
say "sqlfluff's output"
cat "$sqlfluff_log"
rm -f "$sqlfluff_log"
if [ "$sqlfluff_status" -ne 0 ]; then
    exit "$sqlfluff_status"  # the trap stops both pytest processes
fi
others_status=0
step wait "$others_pid" || others_status=$?
others_pid=""
rm -f "$serial_done"
first_status=0
step joined "pytest: the serial and embedded tests" || first_status=$?
[ "$first_status" -eq 0 ] || exit "$first_status"
[ "$others_status" -eq 0 ] || exit "$others_status"
if [ "$ran" -eq 0 ]; then
    echo "no test selected" >&2
    exit 5
fi
