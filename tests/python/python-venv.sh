#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the path of a venv holding the Python client (clients/python) and its tools:
#   python-venv.sh
# The venv is cached under ${XDG_CACHE_HOME:-~/.cache}/idempo/, keyed by the constraints file and
# pyproject.toml (pip installs from the package registry, every version pinned by
# clients/python/constraints.txt), and made once even when two runs start together. The package is
# installed anew (not editable) on every call, under the same lock, so callers import what pip
# installed. Used by run-python-tests.sh, tests/docs/run-sql-api-walkthroughs.sh and
# tests/app/metrics/parse.sh (prometheus_client's exposition parsers).
set -euo pipefail
src=$(cd "$(dirname "$0")/../../clients/python" && pwd)
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
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1

exec 9>"$cache/python-$key.lock"
flock 9
if [[ ! -f $venv/ready ]]; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install -q -c "$src/constraints.txt" \
        flit_core "psycopg[binary]" psycopg-pool rfc8785 "aws-lambda-powertools[aws-sdk]" \
        langgraph langchain-core langchain mcp pytest \
        langgraph-checkpoint-postgres prometheus-client ruff mypy >&2
    touch "$venv/ready"
fi
cp -r "$src" "$tmp/package"
"$venv/bin/python" -m pip install -q --no-deps --no-build-isolation --force-reinstall \
    "$tmp/package" >&2
flock -u 9
echo "$venv"
