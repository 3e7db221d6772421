"""What a run of the KYC example makes before its workers start: the ledger and its queue (the
``idempo`` CLI), a worker and an operator login, the checkpointer's tables, the core-banking
provider and one onboarding request per client."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from idempo.consumer import Envelope
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

HERE = Path(__file__).resolve().parent
CHECKPOINT_SCHEMA = "kyc_langgraph"


def log(text: str) -> None:
    """A progress line, on stderr (stdout holds the report)."""
    print(text, file=sys.stderr, flush=True)


def idempo_cli(cli: str, ledger: str, *args: str, namespace: str | None = None) -> tuple[int, str]:
    """Runs the CLI; retries a few times when the binary is briefly missing (being relinked)."""
    command = [cli, "--ledger", ledger, *(["--namespace", namespace] if namespace else []), *args]
    for _ in range(30):
        if os.access(cli, os.X_OK):
            break
        time.sleep(1)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


@dataclass
class Logins:
    """The conninfos of the worker's and the operator's logins (the ledger's own when no role
    could be made), and the password file that holds their passwords."""

    worker: str
    operator: str
    note: str


def make_logins(ledger: str, scratch: Path) -> Logins:
    """A login in idempo_worker and one in idempo_operator, with fresh passwords in a PGPASSFILE
    of ``scratch``; the ledger's own login when this login may not create roles."""
    params = conninfo_to_dict(ledger)
    passfile = scratch / "pgpass"
    lines = []
    try:
        with psycopg.connect(ledger, autocommit=True) as conn:
            for login, group in (
                ("kyc_worker", "idempo_worker"),
                ("kyc_operator", "idempo_operator"),
            ):
                password = _make_login(conn, login, group)
                host = params.get("host", "localhost")
                lines.append(f"{host}:{params.get('port', '5432')}:*:{login}:{password}")
    except psycopg.Error as error:
        return Logins(ledger, ledger, f"the ledger's login for all ({error.diag.message_primary})")
    passfile.write_text("\n".join(lines) + "\n")
    passfile.chmod(0o600)
    return Logins(
        make_conninfo(ledger, user="kyc_worker", passfile=str(passfile)),
        make_conninfo(ledger, user="kyc_operator", passfile=str(passfile)),
        "kyc_worker (idempo_worker) and kyc_operator (idempo_operator)",
    )


def _make_login(conn: psycopg.Connection[Any], login: str, group: str) -> str:
    """The role ``login`` in ``group``, made or altered with a fresh password; the password."""
    password = secrets.token_hex(16)
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (login,)).fetchone()
    verb = "ALTER" if exists else "CREATE"
    conn.execute(
        sql.SQL("{} ROLE {} LOGIN PASSWORD {}").format(
            sql.SQL(verb), sql.Identifier(login), sql.Literal(password)
        )
    )
    conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(login)))
    return password


def prepare_checkpoints(ledger: str, worker_login: str) -> str:
    """The checkpointer's tables in their own schema; the conninfo workers use for them."""
    with psycopg.connect(ledger, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext('kyc_langgraph.setup'))")
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {CHECKPOINT_SCHEMA}")
        user = conninfo_to_dict(worker_login).get("user")
        if worker_login != ledger and user:
            conn.execute(f"GRANT USAGE ON SCHEMA {CHECKPOINT_SCHEMA} TO {user}")
    conninfo = make_conninfo(ledger, options=f"-c search_path={CHECKPOINT_SCHEMA}")
    with psycopg.Connection.connect(
        conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        PostgresSaver(conn).setup()
        if worker_login != ledger and user:
            conn.execute(
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {CHECKPOINT_SCHEMA} "
                f"TO {user}"
            )
        conn.execute("SELECT pg_advisory_unlock_all()")
    return make_conninfo(worker_login, options=f"-c search_path={CHECKPOINT_SCHEMA}")


def prepare_ledger(cli: str, ledger: str, queue_name: str, scratch: Path) -> tuple[Logins, str]:
    """``idempo init``, the logins, the checkpointer's tables and the queue; the logins and the
    conninfo of the checkpointer's tables."""
    status, out = idempo_cli(cli, ledger, "init")
    if status != 0:
        raise SystemExit(f"kyc_run: idempo init failed ({status}): {out}")
    logins = make_logins(ledger, scratch)
    checkpoints = prepare_checkpoints(ledger, logins.worker)
    status, out = idempo_cli(cli, ledger, "queue", "create", queue_name, "--max-reads", "20")
    if status != 0:
        raise SystemExit(f"kyc_run: queue create failed ({status}): {out}")
    return logins, checkpoints


def start_provider(db: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "kyc_provider.py"), "--db", db],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        raise SystemExit("kyc_run: the provider did not start")
    return process, f"http://127.0.0.1:{json.loads(line)['port']}"


def envelopes(tag: str, clients: int) -> list[Envelope]:
    produced = int(time.time() * 1000)
    out = []
    for i in range(1, clients + 1):
        run_id = f"kyc-{tag}-{i:05d}"
        payload = {
            "client_ref": f"c-{tag}-{i:05d}",
            "name": f"Client {i}",
            "documents": {
                "passport": f"P{i:07d}|Client {i}|1990-01-{1 + i % 28:02d}",
                "proof_of_address": f"{i} Example Street",
            },
        }
        out.append(
            Envelope(
                run_id, "onboard", "intake", "kyc_graph", payload, produced, f"{run_id}:onboard"
            )
        )
    return out


def doomed_clients(sends: list[Envelope], kills: int) -> list[str]:
    """The clients whose worker is killed: ``kills`` of them, spread over the requests."""
    step = len(sends) / kills if kills else 0
    return [sends[int(i * step + step / 2)].payload["client_ref"] for i in range(kills)]
