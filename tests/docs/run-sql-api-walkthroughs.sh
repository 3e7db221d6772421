#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the walk-throughs of docs/sql-api.md (the ```sql walkthrough and ```python walkthrough
# blocks) against $IDEMPO_TEST_POSTGRES_URL, set by tests/pg/with-postgres.sh:
#   run-sql-api-walkthroughs.sh IDEMPO_BINARY DOC
# The ledger is made by `idempo init` first. The Python block runs in the Python client's venv,
# made by tests/python/python-venv.sh (the same cached venv as the python_client test).
set -euo pipefail
idempo=$1
doc=$2
url=${IDEMPO_TEST_POSTGRES_URL:?run under tests/pg/with-postgres.sh}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$idempo" init --ledger "$url" >/dev/null
awk '/^```sql walkthrough$/ {on = 1; next} /^```$/ {on = 0} on' "$doc" >"$tmp/walk.sql"
awk '/^```python walkthrough$/ {on = 1; next} /^```$/ {on = 0} on' "$doc" >"$tmp/walk.py"
[[ -s $tmp/walk.sql && -s $tmp/walk.py ]] || { echo "no walk-through blocks in $doc" >&2; exit 1; }

psql -X -q -v ON_ERROR_STOP=1 -d "$url" -f "$tmp/walk.sql"
echo "psql walk-through: ok"

# The Python block runs in the Python client's venv (psycopg 3 and the package's canonicaliser).
venv=$(bash "$(dirname "$0")/../python/python-venv.sh")
IDEMPO_URL=$url PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" "$tmp/walk.py"
