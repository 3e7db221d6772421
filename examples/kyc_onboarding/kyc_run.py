"""Runs the KYC onboarding example end to end on one PostgreSQL ledger and reports what happened.

    python kyc_run.py --ledger URL [--idempo PATH] [--clients N] [--workers W] [--kills K]
                      [--no-guard] [--json]

Makes the ledger (``idempo init``), a worker and an operator login when it may, the queue of
onboarding requests and the checkpointer's tables; starts the core-banking provider and W worker
processes; sends one envelope per client; SIGKILLs a worker each time one reports that the
provider opened an account it has not recorded yet (K clients are chosen for it) and starts
another; reconciles each provisioning whose worker died by the provider's lookup, as the
operator; waits until every request is done; then checks, at the provider, that every client has
one account and that it carries the decision the ledger recorded first. ``run`` beside this file
wraps it (a throwaway PostgreSQL when no ledger is given). Exit 0 when every check holds, 65
when one fails (with ``--no-guard``: 0 when it ran; its duplicates are the point).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from idempo import Ledger
from idempo.consumer import Envelope
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from kyc_graph import Provider

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHECKPOINT_SCHEMA = "kyc_langgraph"


def log(text: str) -> None:
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
                password = secrets.token_hex(16)
                exists = conn.execute(
                    "SELECT 1 FROM pg_roles WHERE rolname = %s", (login,)
                ).fetchone()
                verb = "ALTER" if exists else "CREATE"
                conn.execute(
                    sql.SQL("{} ROLE {} LOGIN PASSWORD {}").format(
                        sql.SQL(verb), sql.Identifier(login), sql.Literal(password)
                    )
                )
                conn.execute(
                    sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(login))
                )
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


@dataclass
class Worker:
    slot: int
    generation: int
    process: subprocess.Popen[str]
    owner: str


@dataclass
class Observed:
    """What the workers reported."""

    model: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    accounts_opened: Counter[str] = field(default_factory=Counter)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    restarts: int = 0


class Fleet:
    """The worker processes: started, their events read, killed and replaced."""

    def __init__(self, args: argparse.Namespace, env: dict[str, str], command: list[str]) -> None:
        self.args = args
        self.env = env
        self.command = command
        self.events: queue.Queue[tuple[Worker, dict[str, Any] | None]] = queue.Queue()
        self.workers: dict[int, Worker] = {}
        self.stopping = False

    def start(self, slot: int, generation: int) -> None:
        owner = f"kyc-worker-{slot}.{generation}"
        process = subprocess.Popen(
            [*self.command, "--owner", owner],
            env=self.env,
            stdout=subprocess.PIPE,
            text=True,
        )
        worker = Worker(slot, generation, process, owner)
        self.workers[slot] = worker
        threading.Thread(target=self._read, args=(worker,), daemon=True).start()

    def _read(self, worker: Worker) -> None:
        assert worker.process.stdout is not None
        for line in worker.process.stdout:
            try:
                self.events.put((worker, json.loads(line)))
            except ValueError:
                log(f"{worker.owner}: {line.rstrip()}")
        worker.process.wait()
        self.events.put((worker, None))

    def kill(self, worker: Worker) -> None:
        worker.process.send_signal(signal.SIGKILL)
        worker.process.wait()

    def stop(self) -> None:
        self.stopping = True
        for worker in self.workers.values():
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        for worker in self.workers.values():
            try:
                worker.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()


class Reconciler:
    """Settles each provisioning whose worker died: looks the client up at the provider and
    records the answer in the ledger as the operator (``idempo.reconcile``)."""

    FIND = """
        SELECT operation_key, payload::jsonb ->> 'client_ref', state FROM idempo.operations
        WHERE namespace = %s AND step_id = 'provision_account'
          AND (state = 'unknown_outcome'
               OR (state = 'dispatching' AND lease_expires_at_ms <= idempo.now_ms()))
    """

    def __init__(self, operator: str, namespace: str, provider: Provider) -> None:
        self.conn = psycopg.connect(operator, autocommit=True)
        self.namespace = namespace
        self.provider = provider
        self.settled: list[dict[str, Any]] = []

    def run_once(self) -> None:
        for key, client, state in self.conn.execute(self.FIND, (self.namespace,)).fetchall():
            accounts = self.provider.accounts_of(client)
            evidence: dict[str, Any] = {
                "provider": "core-banking",
                "answer": {"accounts": accounts},
            }
            if accounts:
                evidence |= {"status": "found", "reference": accounts[0]["account_id"]}
            else:
                evidence |= {"status": "not_found"}
            try:
                moved = self.conn.execute(
                    "SELECT from_state, to_state FROM idempo.reconcile(%s, %s, %s, %s)",
                    (
                        self.namespace,
                        key,
                        json.dumps(evidence),
                        f"provider lookup by client reference {client}",
                    ),
                ).fetchone()
            except psycopg.Error as error:
                if error.sqlstate == "ID007":  # settled or taken meanwhile
                    continue
                raise
            assert moved is not None
            self.settled.append(
                {
                    "key": key,
                    "client": client,
                    "was": state,
                    "from": moved[0],
                    "to": moved[1],
                    "evidence": evidence["status"],
                    "reference": evidence.get("reference"),
                }
            )
            log(
                f"reconciled {key}: provider {evidence['status']} "
                f"{evidence.get('reference', '')} ({moved[0]} -> {moved[1]})"
            )

    def close(self) -> None:
        self.conn.close()


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


def queue_length(conn: psycopg.Connection[Any], name: str) -> int:
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM pgmq.{}").format(sql.Identifier(f"q_{name}"))
    ).fetchone()
    return int(row[0]) if row else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ledger", required=True, help="PostgreSQL URL of the ledger")
    parser.add_argument("--idempo", default=str(REPO / "build/app/idempo"), help="the CLI")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--kills", type=int, default=2, help="clients whose worker is killed")
    parser.add_argument("--no-guard", action="store_true", help="the same without the ledger")
    parser.add_argument("--namespace", help="default kyc-<run tag>")
    parser.add_argument("--vt-ms", type=int, default=4_000, help="queue visibility timeout")
    parser.add_argument("--lease-ms", type=int, default=2_000, help="the steps' lease")
    parser.add_argument("--timeout-s", type=float, default=900)
    parser.add_argument("--json", action="store_true", help="the report as one JSON object")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.workers < 1 or not 0 <= args.kills <= args.clients:
        parser.error("--clients and --workers must be >= 1, --kills 0..clients")

    tag = time.strftime("%m%d%H%M%S") + secrets.token_hex(2)
    namespace = args.namespace or f"kyc-{tag}"
    queue_name = f"kyc_{tag}"
    scratch = Path(tempfile.mkdtemp(prefix="kyc-"))
    provider_process = None
    fleet = None
    try:
        status, out = idempo_cli(args.idempo, args.ledger, "init")
        if status != 0:
            raise SystemExit(f"kyc_run: idempo init failed ({status}): {out}")
        logins = make_logins(args.ledger, scratch)
        checkpoints = prepare_checkpoints(args.ledger, logins.worker)
        status, out = idempo_cli(
            args.idempo, args.ledger, "queue", "create", queue_name, "--max-reads", "20"
        )
        if status != 0:
            raise SystemExit(f"kyc_run: queue create failed ({status}): {out}")
        provider_process, provider_url = start_provider(args.ledger)
        provider = Provider(provider_url)
        sends = envelopes(tag, args.clients)
        step = args.clients / args.kills if args.kills else 0
        doomed = [sends[int(i * step + step / 2)].payload["client_ref"] for i in range(args.kills)]
        mode = "no guard" if args.no_guard else "guarded"
        log(
            f"kyc: {args.clients} clients, {args.workers} workers, {args.kills} kills, {mode}; "
            f"ledger namespace {namespace}, queue {queue_name}, provider {provider_url}"
        )
        log(f"kyc: logins: {logins.note}")

        started = time.monotonic()
        with Ledger(args.ledger, namespace=namespace, owner="kyc-intake") as intake:
            for envelope in sends:
                intake.send(queue_name, envelope.as_message())
        (scratch / "crashed").mkdir()
        env = dict(os.environ)
        env |= {
            "KYC_CRASH_AT": "after_account",
            "KYC_CRASH_CLIENTS": ",".join(doomed),
            "KYC_CRASH_DIR": str(scratch / "crashed"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")])),
        }
        command = [
            sys.executable, str(HERE / "kyc_worker.py"),
            "--ledger", logins.worker, "--namespace", namespace, "--queue", queue_name,
            "--provider", provider_url, "--checkpoints", checkpoints,
            "--vt-ms", str(args.vt_ms), "--lease-ms", str(args.lease_ms),
        ]  # fmt: skip
        if args.no_guard:
            command.append("--no-guard")
        fleet = Fleet(args, env, command)
        generations = [0] * args.workers
        for slot in range(args.workers):
            fleet.start(slot, 0)
        observed = Observed()
        reconciler = None if args.no_guard else Reconciler(logins.operator, namespace, provider)
        watch = psycopg.connect(args.ledger, autocommit=True)
        empty_polls = 0
        next_poll = 0.0
        timed_out = False
        while True:
            try:
                worker, event = fleet.events.get(timeout=0.1)
            except queue.Empty:
                worker, event = None, None
            if worker is not None:
                handle_event(fleet, worker, event, observed, generations)
            now = time.monotonic()
            if now < next_poll:
                continue
            next_poll = now + 0.3
            if reconciler is not None:
                reconciler.run_once()
            if queue_length(watch, queue_name) == 0:
                empty_polls += 1
                if empty_polls >= 2:
                    break
            else:
                empty_polls = 0
            if now - started > args.timeout_s:
                timed_out = True
                break
        wall_s = time.monotonic() - started
        fleet.stop()
        while not fleet.events.empty():
            worker, event = fleet.events.get()
            handle_event(fleet, worker, event, observed, generations)
        if reconciler is not None:
            reconciler.close()
        report = build_report(args, namespace, queue_name, watch, provider, observed, doomed, tag)
        report |= {
            "wall_s": round(wall_s, 2),
            "timed_out": timed_out,
            "reconciled": reconciler.settled if reconciler else [],
            "logins": logins.note,
        }
        if not args.no_guard:
            report["idempo_check"] = idempo_check(args.idempo, args.ledger, namespace)
            report["ok"] = report["ok"] and report["idempo_check"]["ok"]
        watch.close()
        print_report(report, args.json)
        return 0 if report["ok"] or args.no_guard else 65
    finally:
        if fleet is not None:
            fleet.stop()
        if provider_process is not None:
            provider_process.terminate()
            provider_process.wait()
        shutil.rmtree(scratch, ignore_errors=True)


# `idempo check` reads these from the sandbox's effect journals, which this example's provider does
# not write (it knows no operation keys); the example checks the provider's side itself.
JOURNAL_INVARIANTS = ("at_most_one_effect", "receipt_matches_effect", "effect_recorded")


def idempo_check(cli: str, ledger: str, namespace: str) -> dict[str, Any]:
    """``idempo check`` of the namespace: the ledger's own invariants must hold."""
    status, out = idempo_cli(cli, ledger, "--json", "check", namespace=namespace)
    try:
        invariants = json.loads(out.splitlines()[0])["invariants"]
    except (ValueError, KeyError, IndexError):
        return {"exit": status, "ok": False, "output": out}
    ledger_side = {
        i["name"]: i["violations"] for i in invariants if i["name"] not in JOURNAL_INVARIANTS
    }
    return {
        "exit": status,
        "ok": not any(ledger_side.values()),
        "ledger_invariants": ledger_side,
        "journal_invariants_not_applicable": list(JOURNAL_INVARIANTS),
    }


def handle_event(
    fleet: Fleet,
    worker: Worker,
    event: dict[str, Any] | None,
    observed: Observed,
    generations: list[int],
) -> None:
    """One worker event; ``None``: the worker's output ended (it exited or was killed)."""
    if event is None:
        if fleet.stopping or fleet.workers.get(worker.slot) is not worker:
            return
        # It ended by itself (an error it could not record): another takes its slot.
        observed.restarts += 1
        generations[worker.slot] += 1
        fleet.start(worker.slot, generations[worker.slot])
        return
    kind = event.get("event")
    if kind == "model":
        observed.model[event["client"]].append(event["risk"])
    elif kind == "account":
        observed.accounts_opened[event["client"]] += 1
    elif kind == "error":
        observed.errors.append(event)
        log(f"kyc: {worker.owner}: {event['error']}")
    elif kind == "crash":
        fleet.kill(worker)
        observed.crashes.append({**event, "worker": worker.owner})
        log(
            f"kyc: {worker.owner} reported the account of {event['client']} opened and "
            "unrecorded: SIGKILL"
        )
        generations[worker.slot] += 1
        fleet.start(worker.slot, generations[worker.slot])


def build_report(
    args: argparse.Namespace,
    namespace: str,
    queue_name: str,
    conn: psycopg.Connection[Any],
    provider: Provider,
    observed: Observed,
    doomed: list[str],
    tag: str,
) -> dict[str, Any]:
    rows = conn.execute(
        "SELECT client_ref, account_id, risk FROM core_banking.accounts "
        "WHERE client_ref LIKE %s ORDER BY seq",
        (f"c-{tag}-%",),
    ).fetchall()
    accounts: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for client, account, risk in rows:
        accounts[client].append((account, risk))
    clients = [f"c-{tag}-{i:05d}" for i in range(1, args.clients + 1)]
    per_client = Counter(len(accounts[c]) for c in clients)
    duplicates = {c: [a for a, _ in accounts[c]] for c in clients if len(accounts[c]) > 1}
    swapped = {
        c: [r for _, r in accounts[c]] for c in clients if len({r for _, r in accounts[c]}) > 1
    }
    report: dict[str, Any] = {
        "mode": "no_guard" if args.no_guard else "guarded",
        "namespace": namespace,
        "queue": queue_name,
        "clients": args.clients,
        "workers": args.workers,
        "kills": len(observed.crashes),
        "worker_restarts": observed.restarts,
        "provider_accounts": len(rows),
        "accounts_per_client": {str(k): v for k, v in sorted(per_client.items())},
        "duplicate_accounts": duplicates,
        "decisions_swapped": swapped,
        "model_calls": sum(len(v) for v in observed.model.values()),
        "errors": observed.errors,
    }
    dead = conn.execute(
        sql.SQL("SELECT count(*) FROM pgmq.{}").format(sql.Identifier(f"q_{queue_name}_dlq"))
    ).fetchone()
    report["dead_letters"] = int(dead[0]) if dead else 0
    killed = []
    for crash in observed.crashes:
        client = crash["client"]
        first = observed.model[client][0] if observed.model[client] else None
        killed.append(
            {
                "client": client,
                "worker": crash["worker"],
                "first_decision": first,
                "model_calls": len(observed.model[client]),
                "accounts": [{"account_id": a, "risk": r} for a, r in accounts[client]],
            }
        )
    report["killed"] = killed
    if args.no_guard:
        report["ok"] = per_client == Counter({1: args.clients})
        return report

    # The account each provisioning's record names: its result (the step's answer) or, once
    # reconciled, its receipt (the provider's reference).
    recorded: dict[str, str | None] = {}
    for client, result, receipt in conn.execute(
        "SELECT payload::jsonb ->> 'client_ref', nullif(result, '')::jsonb ->> 'account_id', "
        "nullif(receipt, '')::jsonb ->> 'external_reference' FROM idempo.operations "
        "WHERE namespace = %s AND step_id = 'provision_account'",
        (namespace,),
    ).fetchall():
        recorded[client] = result or receipt
    decisions = {
        row[0]: json.loads(row[1])["risk"]
        for row in conn.execute(
            "SELECT run_id, result FROM idempo.operations WHERE namespace = %s "
            "AND step_id = 'compliance_check' AND state = 'succeeded'",
            (namespace,),
        ).fetchall()
    }
    # The decision the ledger recorded first, beside the account the provider holds.
    mismatched = [
        c
        for c in clients
        if len(accounts[c]) != 1 or decisions.get(c.replace("c-", "kyc-", 1)) != accounts[c][0][1]
    ]
    for entry in killed:
        client = entry["client"]
        entry["ledger_decision"] = decisions.get(client.replace("c-", "kyc-", 1))
        entry["decision_reused"] = entry["first_decision"] == entry["ledger_decision"] and all(
            a["risk"] == entry["first_decision"] for a in entry["accounts"]
        )
    states = dict(
        conn.execute(
            "SELECT step_id || ':' || state, count(*) FROM idempo.operations "
            "WHERE namespace = %s GROUP BY 1 ORDER BY 1",
            (namespace,),
        ).fetchall()
    )
    suppressions = [
        {"step": step, "outcome": outcome, "state": state, "count": count}
        for step, outcome, state, count in conn.execute(
            "SELECT o.step_id, s.outcome, s.state, count(*) FROM idempo.suppressions AS s "
            "JOIN idempo.operations AS o ON o.namespace = s.namespace "
            "AND o.operation_key = s.operation_key WHERE s.namespace = %s "
            "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
            (namespace,),
        ).fetchall()
    ]
    report |= {
        "states": states,
        "suppressions": suppressions,
        "clients_not_matching_ledger": mismatched,
        "records_not_naming_the_account": [
            c for c in clients if not accounts[c] or recorded.get(c) != accounts[c][0][0]
        ],
    }
    report["ok"] = (
        per_client == Counter({1: args.clients})
        and not mismatched
        and all(entry["decision_reused"] for entry in killed)
        and not report["records_not_naming_the_account"]
        and report["dead_letters"] == 0
    )
    return report


def print_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report))
        return
    out = print
    out(
        f"KYC onboarding, {report['mode']}: {report['clients']} clients, {report['workers']} "
        f"workers, {report['kills']} killed after the provider opened an account, "
        f"{report['wall_s']} s"
    )
    per = ", ".join(
        f"{n} account(s): {c} clients" for n, c in report["accounts_per_client"].items()
    )
    out(f"  accounts at the provider: {report['provider_accounts']} ({per})")
    for client, ids in report["duplicate_accounts"].items():
        out(f"  DUPLICATE {client}: {', '.join(ids)}")
    for client, risks in report["decisions_swapped"].items():
        out(f"  DECISION SWAPPED {client}: {' then '.join(risks)}")
    out(f"  model calls: {report['model_calls']} for {report['clients']} clients")
    for entry in report["killed"]:
        accounts = ", ".join(f"{a['account_id']} ({a['risk']})" for a in entry["accounts"])
        line = (
            f"  killed {entry['worker']} on {entry['client']}: first decision "
            f"{entry['first_decision']}, model asked {entry['model_calls']}x, accounts: {accounts}"
        )
        if "ledger_decision" in entry:
            line += (
                f"; ledger's decision {entry['ledger_decision']}"
                f" -> {'reused' if entry['decision_reused'] else 'NOT REUSED'}"
            )
        out(line)
    for settled in report.get("reconciled", []):
        out(
            f"  reconciled {settled['key']}: provider {settled['evidence']} "
            f"{settled['reference'] or ''} ({settled['from']} -> {settled['to']})"
        )
    for s in report.get("suppressions", []):
        out(f"  suppressed {s['count']}x {s['step']}: {s['outcome']} ({s['state']})")
    if "states" in report:
        out("  ledger: " + ", ".join(f"{k} {v}" for k, v in report["states"].items()))
    if "idempo_check" in report:
        check = report["idempo_check"]
        names = ", ".join(check.get("ledger_invariants", {}))
        out(
            f"  idempo check, the ledger's invariants ({names}): "
            f"{'clean' if check['ok'] else 'VIOLATED'}"
        )
    for name in ("clients_not_matching_ledger", "records_not_naming_the_account"):
        if report.get(name):
            out(f"  {name}: {', '.join(report[name][:10])}")
    if report["dead_letters"]:
        out(f"  dead letters: {report['dead_letters']}")
    if report["timed_out"]:
        out("  TIMED OUT before every request was done")
    verdict = "one account per client" if report["ok"] else "NOT one account per client"
    out(f"  => {verdict}; namespace {report['namespace']}")


if __name__ == "__main__":
    sys.exit(main())
