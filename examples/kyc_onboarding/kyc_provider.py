"""The core-banking provider of the KYC example: a small HTTP service on loopback.

It opens accounts and looks them up by client reference. It honours no idempotency key: every
``POST /accounts`` opens a new account, so a retried request makes a second one. Its accounts live
in the schema ``core_banking`` of a PostgreSQL database (the ledger's server, its own schema).

    python kyc_provider.py --db URL [--port 0]

prints ``{"event": "listening", "port": N}`` on stdout once it serves.

- ``POST /accounts`` ``{"client_ref", "name", "risk"}`` → 201 the account
  (``account_id``, ``client_ref``, ``name``, ``risk``, ``created_at``)
- ``GET /accounts?client_ref=REF`` → 200 ``{"accounts": [...]}``, oldest first (the lookup)
- ``GET /health`` → 200
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

SCHEMA = """
CREATE SCHEMA IF NOT EXISTS core_banking;
CREATE TABLE IF NOT EXISTS core_banking.accounts (
    seq bigserial PRIMARY KEY,
    account_id text NOT NULL UNIQUE,
    client_ref text NOT NULL,
    name text NOT NULL,
    risk text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS accounts_client_ref ON core_banking.accounts (client_ref);
"""

COLUMNS = (
    "account_id, client_ref, name, risk, to_char(created_at, 'YYYY-MM-DD\"T\"HH24:MI:SS.MSOF')"
)


def create_schema(db: str) -> None:
    """Creates the provider's schema and table when they are missing."""
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        # Two providers starting together (a test beside a run) would race on CREATE.
        conn.execute("SELECT pg_advisory_lock(hashtext('core_banking.schema'))")
        conn.execute(SCHEMA)
        conn.execute("SELECT pg_advisory_unlock(hashtext('core_banking.schema'))")


def _account(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "account_id": row["account_id"],
        "client_ref": row["client_ref"],
        "name": row["name"],
        "risk": row["risk"],
        "created_at": row["to_char"],
    }


class CoreBanking(BaseHTTPRequestHandler):
    """The provider's two routes over the pool ``server.pool``."""

    server: ProviderServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/health":
            self._answer(200, {"ok": True})
            return
        refs = parse_qs(url.query).get("client_ref")
        if url.path != "/accounts" or not refs:
            self._answer(404, {"error": "GET /accounts?client_ref=REF"})
            return
        with self.server.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM core_banking.accounts WHERE client_ref = %s ORDER BY seq",
                (refs[0],),
            ).fetchall()
        self._answer(200, {"accounts": [_account(row) for row in rows]})

    def do_POST(self) -> None:
        if urlsplit(self.path).path != "/accounts":
            self._answer(404, {"error": "POST /accounts"})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            values = (str(body["client_ref"]), str(body["name"]), str(body["risk"]))
        except (ValueError, KeyError, TypeError) as error:
            self._answer(400, {"error": f"client_ref, name and risk are required: {error}"})
            return
        # No key, no lookup first: every request opens an account.
        with self.server.pool.connection() as conn:
            row = conn.execute(
                "INSERT INTO core_banking.accounts (account_id, client_ref, name, risk) "
                "VALUES ('acc-' || lpad(nextval('core_banking.accounts_seq_seq')::text, 7, '0'), "
                f"%s, %s, %s) RETURNING {COLUMNS}",
                values,
            ).fetchone()
        assert row is not None
        self._answer(201, _account(row))


class ProviderServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, pool: ConnectionPool[Any]) -> None:
        super().__init__(("127.0.0.1", port), CoreBanking)
        self.pool = pool


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="PostgreSQL URL of the provider's database")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    args = parser.parse_args(argv)
    create_schema(args.db)
    pool: ConnectionPool[Any] = ConnectionPool(
        args.db, min_size=1, max_size=8, kwargs={"autocommit": True, "row_factory": dict_row}
    )
    server = ProviderServer(args.port, pool)
    signal.signal(signal.SIGTERM, lambda *_: server.shutdown())
    print(json.dumps({"event": "listening", "port": server.server_address[1]}), flush=True)
    # serve_forever in a thread: shutdown() from the signal handler must not run on its thread.
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    serving.join()
    server.server_close()
    pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
