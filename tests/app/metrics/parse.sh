#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs parse_exposition.py (beside this file) in the project's pinned Python venv
# (tests/python/python-venv.sh, which holds prometheus_client); a failing venv fails the run, so
# the tests that use it never pass without the parser they rely on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$("$here/../../python/python-venv.sh")
exec "$venv/bin/python" "$here/parse_exposition.py" "$@"
