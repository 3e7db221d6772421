#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the Python client (clients/python) against $IDEMPO_TEST_POSTGRES_URL, set by
# tests/pg/with-postgres.sh:
#   run-python-tests.sh IDEMPO_BINARY
# In the venv python-venv.sh makes (cached, every version pinned by clients/python/constraints.txt,
# the package installed anew): runs ruff, mypy --strict and pytest, which drives the CLI beside the
# package. pytest's "no tests ran" (exit 5) fails like any failure.
set -euo pipefail
idempo=$(realpath "$1")
src=$(cd "$(dirname "$0")/../../clients/python" && pwd)
: "${IDEMPO_TEST_POSTGRES_URL:?run under tests/pg/with-postgres.sh}"
venv=$(bash "$(dirname "$0")/python-venv.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONDONTWRITEBYTECODE=1 MYPY_CACHE_DIR=$tmp/mypy RUFF_CACHE_DIR=$tmp/ruff

cd "$src"
# bench/ needs DBOS, which this venv leaves out: ruff reads it, mypy does not.
"$venv/bin/python" -m ruff check --no-cache src tests bench
"$venv/bin/python" -m ruff format --check --no-cache src tests bench
"$venv/bin/python" -m mypy --strict src/idempo tests
# The KYC example, with its own settings (examples/kyc_onboarding/pyproject.toml); its end-to-end
# run is tests/test_kyc_example.py.
(cd ../../examples/kyc_onboarding &&
    "$venv/bin/python" -m ruff check --no-cache . &&
    "$venv/bin/python" -m ruff format --check --no-cache . &&
    "$venv/bin/python" -m mypy --strict .)
"$venv/bin/python" -m pytest -p no:cacheprovider -q --idempo-cli "$idempo" tests
