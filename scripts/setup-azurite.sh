#!/usr/bin/env bash
# Install Azurite, Azure Storage's emulator (npm), for the store tests and
# benchmarks/sweep_stores.py: under .tools/, every package pinned by
# scripts/azurite/package-lock.json (npm ci installs exactly that tree, so a new release of one of
# its 450 dependencies cannot change a run). Idempotent: an install of the same lock is left alone.
#
# Only the tests need it, so scripts/test.sh runs it (beside scripts/setup.sh's install: npm
# waits on the network and its files), not scripts/setup.sh: a user's install has no Node step.
# The registry is a network service: a failed attempt is tried again twice, 10 s and 30 s
# later, and npm's own log is printed if the last one fails.
set -euo pipefail
cd "$(dirname "$0")/.."

if cmp -s scripts/azurite/package-lock.json .tools/installed-lock.json && [ -x .tools/node_modules/.bin/azurite-blob ]; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "installing Node.js and npm (Azurite, the Azure Storage emulator, runs on Node)" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    else
        echo "the store tests need npm (Node.js >= 20) to install Azurite; install it and re-run" >&2
        exit 1
    fi
fi
echo "installing Azurite under .tools/ from scripts/azurite/package-lock.json" >&2
mkdir -p .tools
rm -f .tools/installed-lock.json
cp scripts/azurite/package.json scripts/azurite/package-lock.json .tools/
for pause in 10 30 0; do
    # installed-lock.json, copied last, marks a finished install for the check above
    if npm ci --prefix .tools --no-audit --no-fund --loglevel=error >.tools/npm-install.log 2>&1 \
        && cp scripts/azurite/package-lock.json .tools/installed-lock.json; then
        exit 0
    fi
    [ "$pause" = 0 ] && break
    echo "npm ci failed (log: .tools/npm-install.log); trying again in $pause s" >&2
    sleep "$pause"
done
tail -n 40 .tools/npm-install.log >&2 || true
echo "installing Azurite under .tools/ failed three times (npm's last log above: .tools/npm-install.log)" >&2
exit 1
