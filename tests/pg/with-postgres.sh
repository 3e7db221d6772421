#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs CMD against a throwaway PostgreSQL cluster:
#   tests/pg/with-postgres.sh CMD [ARG...]
# initdb's a cluster in a fresh temporary directory, starts it on 127.0.0.1 on a free port,
# creates the database idempo_test, exports
#   IDEMPO_TEST_POSTGRES_URL=postgresql://idempo@127.0.0.1:PORT/idempo_test
# runs CMD, then stops the server and removes the directory, also when CMD or a step fails.
# The superuser `idempo` connects without a password (trust, loopback only); every other role
# must authenticate with scram-sha-256, so tests can exercise .pgpass and wrong passwords.
# Exits with CMD's status; 77 (CTest's skip code) when no PostgreSQL server binaries are found.
# PG_BINDIR overrides where initdb, pg_ctl and postgres are looked up. IDEMPO_PG_DURABLE=1 keeps
# the server's default durability (fsync, synchronous_commit, full_page_writes on), for benchmarks.
# CMD may stop and start the server (a restart in the middle of a run) through
#   "$IDEMPO_TEST_POSTGRES_CTL" stop|start|restart
# (fast shutdown: sessions end with SQLSTATE 57P01, as in a real restart); the same port and data.
set -euo pipefail

# Control mode, behind $IDEMPO_TEST_POSTGRES_CTL: with-postgres.sh --control DIR stop|start|restart
if [[ ${1:-} == --control ]]; then
    # shellcheck source=/dev/null
    source "$2/control.env"
    case ${3:-} in
        stop) "${as_server[@]}" "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null ;;
        start) "${as_server[@]}" "$bindir/pg_ctl" -D "$data" -l "$tmp/server.log" -w -t 60 -o "$options" start >/dev/null ;;
        restart)
            "${as_server[@]}" "$bindir/pg_ctl" -D "$data" -l "$tmp/server.log" -m fast -w -t 60 -o "$options" \
                restart >/dev/null
            ;;
        *) echo "usage: $0 --control DIR stop|start|restart" >&2; exit 64 ;;
    esac
    exit
fi

if [[ $# -eq 0 ]]; then
    echo "usage: $0 CMD [ARG...]" >&2
    exit 64
fi

bindir=${PG_BINDIR:-}
if [[ -z $bindir ]]; then
    for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r) \
                     "$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)")"; do
        if [[ -x $candidate/initdb && -x $candidate/pg_ctl ]]; then
            bindir=$candidate
            break
        fi
    done
fi
if [[ -z $bindir || ! -x $bindir/initdb ]]; then
    echo "with-postgres.sh: no PostgreSQL server binaries (initdb, pg_ctl) found; set PG_BINDIR" >&2
    exit 77
fi

# The server refuses to run as root: run it as `postgres` then, which must own the directory.
as_server=()
if [[ $(id -u) -eq 0 ]]; then
    as_server=(runuser -u postgres --)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/idempo-pg.XXXXXX")
data=$tmp/data
started=0
cleanup() {
    local status=$?
    if [[ $started -eq 1 ]]; then
        "${as_server[@]}" "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ ${#as_server[@]} -gt 0 ]]; then
    chown postgres: "$tmp"
fi

free_port() {
    python3 - <<'PY' 2>/dev/null && return
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
PY
    # Without Python: a random high port nobody listens on.
    local port
    for _ in $(seq 50); do
        port=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return
        fi
    done
    return 1
}

port=$(free_port)
user=idempo

"${as_server[@]}" "$bindir/initdb" -D "$data" -U "$user" -E UTF8 --no-locale \
    --auth-local=trust --auth-host=scram-sha-256 >"$tmp/initdb.log" 2>&1 \
    || { cat "$tmp/initdb.log" >&2; exit 1; }
{
    echo "host all $user 127.0.0.1/32 trust"
    echo "host all all 127.0.0.1/32 scram-sha-256"
} >"$data/pg_hba.conf"

# fsync off: the cluster is thrown away, so durability buys nothing here (unless measured).
durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
if [[ ${IDEMPO_PG_DURABLE:-0} == 1 ]]; then
    durability=""
fi
options="-c listen_addresses=127.0.0.1 -p $port -k $tmp $durability -c max_connections=200"
"${as_server[@]}" "$bindir/pg_ctl" -D "$data" -l "$tmp/server.log" -w -t 60 -o "$options" start >/dev/null \
    || { cat "$tmp/server.log" >&2; exit 1; }
started=1
declare -p bindir data tmp options as_server >"$tmp/control.env"
printf '#!/usr/bin/env bash\nexec %q --control %q "$@"\n' "$(realpath "$0")" "$tmp" >"$tmp/ctl"
chmod +x "$tmp/ctl"
export IDEMPO_TEST_POSTGRES_CTL=$tmp/ctl

"${as_server[@]}" "$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U "$user" -d postgres \
    -v ON_ERROR_STOP=1 -c "CREATE DATABASE idempo_test" >/dev/null

export IDEMPO_TEST_POSTGRES_URL="postgresql://$user@127.0.0.1:$port/idempo_test"
set +e
"$@"
status=$?
set -e
if [[ $status -ne 0 && -s $tmp/server.log ]]; then
    echo "with-postgres.sh: CMD exited with $status; last server log lines:" >&2
    tail -n 20 "$tmp/server.log" >&2
fi
exit "$status"
