#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the Python client (clients/python) against $IDEMPO_TEST_POSTGRES_URL, set by
# tests/pg/with-postgres.sh:
#   run-python-tests.sh IDEMPO_BINARY
# In a venv cached under ${XDG_CACHE_HOME:-~/.cache}/idempo/, keyed by the constraints file and
# pyproject.toml (pip installs from the package registry, every version pinned by
# clients/python/constraints.txt): installs the package, then runs ruff, mypy --strict and pytest,
# which drives the CLI beside the package. pytest's "no tests ran" (exit 5) fails like any failure.
set -euo pipefail
idempo=$(realpath "$1")
src=$(cd "$(dirname "$0")/../../clients/python" && pwd)
: "${IDEMPO_TEST_POSTGRES_URL:?run under tests/pg/with-postgres.sh}"
python3 -c 'import venv, ensurepip' 2>/dev/null || {
    echo "python3's venv module is missing (Debian: apt install python3-venv)" >&2
    exit 1
}

key=$(cat "$src/constraints.txt" "$src/pyproject.toml" | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/idempo
venv=$cache/python-$key
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 MYPY_CACHE_DIR=$tmp/mypy \
       RUFF_CACHE_DIR=$tmp/ruff

# One venv per key, made once even when two runs start together; the package is installed anew
# (not editable) each run, under the same lock, so the tests import what pip installed.
exec 9>"$cache/python-$key.lock"
flock 9
if [[ ! -f $venv/ready ]]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q -c "$src/constraints.txt" \
        flit_core "psycopg[binary]" psycopg-pool rfc8785 pytest ruff mypy
    touch "$venv/ready"
fi
cp -r "$src" "$tmp/package"
"$venv/bin/python" -m pip install -q --no-deps --no-build-isolation --force-reinstall "$tmp/package"
flock -u 9

cd "$src"
"$venv/bin/python" -m ruff check --no-cache src tests
"$venv/bin/python" -m ruff format --check --no-cache src tests
"$venv/bin/python" -m mypy --strict src/idempo tests
"$venv/bin/python" -m pytest -p no:cacheprovider -q --idempo-cli "$idempo" tests
