#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a Python script in a virtual environment holding exactly requirements.txt (beside this
# file):
#   tests/app/metrics/with-venv.sh CACHE_DIR SCRIPT [ARG...]
# The environment lives in CACHE_DIR under the hash of requirements.txt, made once (under a lock,
# so parallel tests share it) and kept. A failing pip fails the run: the tests that use it must
# never pass without the parser they rely on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=$1
shift
key=$(sha256sum "$here/requirements.txt" | cut -c1-16)
venv=$cache/venv-$key
mkdir -p "$cache"
exec 9>"$cache/venv-$key.lock"
flock 9
if [[ ! -x $venv/bin/python || ! -f $venv/.complete ]]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$here/requirements.txt" >&2
    touch "$venv/.complete"
fi
flock -u 9
exec "$venv/bin/python" "$@"
