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
import os
import queue
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from idempo import Ledger
from idempo.consumer import Envelope
from psycopg import sql

from kyc_fleet import Fleet, Observed
from kyc_graph import Provider
from kyc_reconcile import Reconciler
from kyc_report import build_report, idempo_check, print_report
from kyc_setup import (
    HERE,
    Logins,
    doomed_clients,
    envelopes,
    log,
    prepare_ledger,
    start_provider,
)

REPO = HERE.parents[1]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
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
    return args


def queue_length(conn: psycopg.Connection[Any], name: str) -> int:
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM pgmq.{}").format(sql.Identifier(f"q_{name}"))
    ).fetchone()
    return int(row[0]) if row else 0


class KycRun:
    """One run of the example: what it made and started, until it is closed."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tag = time.strftime("%m%d%H%M%S") + secrets.token_hex(2)
        self.namespace = args.namespace or f"kyc-{self.tag}"
        self.queue_name = f"kyc_{self.tag}"
        self.scratch = Path(tempfile.mkdtemp(prefix="kyc-"))
        self.provider_process: subprocess.Popen[str] | None = None
        self.fleet: Fleet | None = None

    def execute(self) -> int:
        """Sets it all up, runs the workers until every request is done, and reports."""
        args = self.args
        logins, checkpoints = prepare_ledger(
            args.idempo, args.ledger, self.queue_name, self.scratch
        )
        self.provider_process, provider_url = start_provider(args.ledger)
        provider = Provider(provider_url)
        sends = envelopes(self.tag, args.clients)
        doomed = doomed_clients(sends, args.kills)
        mode = "no guard" if args.no_guard else "guarded"
        log(
            f"kyc: {args.clients} clients, {args.workers} workers, {args.kills} kills, {mode}; "
            f"ledger namespace {self.namespace}, queue {self.queue_name}, provider {provider_url}"
        )
        log(f"kyc: logins: {logins.note}")

        started = time.monotonic()
        self.send(sends)
        fleet = self.fleet = self.start_fleet(logins, checkpoints, provider_url, doomed)
        observed = Observed()
        reconciler = (
            None if args.no_guard else Reconciler(logins.operator, self.namespace, provider)
        )
        watch = psycopg.connect(args.ledger, autocommit=True)
        timed_out = self.watch(fleet, observed, reconciler, watch, started)
        wall_s = time.monotonic() - started
        fleet.stop()
        fleet.drain(observed)
        if reconciler is not None:
            reconciler.close()
        report = build_report(args, self.namespace, self.queue_name, watch, observed, self.tag)
        report |= {
            "wall_s": round(wall_s, 2),
            "timed_out": timed_out,
            "reconciled": reconciler.settled if reconciler else [],
            "logins": logins.note,
        }
        self.check_ledger(report)
        watch.close()
        print_report(report, args.json)
        return 0 if report["ok"] or args.no_guard else 65

    def check_ledger(self, report: dict[str, Any]) -> None:
        """``idempo check`` in the report, and in its verdict (not without the guard)."""
        if not self.args.no_guard:
            report["idempo_check"] = idempo_check(
                self.args.idempo, self.args.ledger, self.namespace
            )
            report["ok"] = report["ok"] and report["idempo_check"]["ok"]

    def send(self, sends: list[Envelope]) -> None:
        """One onboarding request per client, on the queue."""
        with Ledger(self.args.ledger, namespace=self.namespace, owner="kyc-intake") as intake:
            for envelope in sends:
                intake.send(self.queue_name, envelope.as_message())

    def start_fleet(
        self, logins: Logins, checkpoints: str, provider_url: str, doomed: list[str]
    ) -> Fleet:
        """The workers, started; the fault hook armed for the ``doomed`` clients."""
        args = self.args
        (self.scratch / "crashed").mkdir()
        env = dict(os.environ)
        env |= {
            "KYC_CRASH_AT": "after_account",
            "KYC_CRASH_CLIENTS": ",".join(doomed),
            "KYC_CRASH_DIR": str(self.scratch / "crashed"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")])),
        }
        command = [
            sys.executable, str(HERE / "kyc_worker.py"),
            "--ledger", logins.worker, "--namespace", self.namespace, "--queue", self.queue_name,
            "--provider", provider_url, "--checkpoints", checkpoints,
            "--vt-ms", str(args.vt_ms), "--lease-ms", str(args.lease_ms),
        ]  # fmt: skip
        if args.no_guard:
            command.append("--no-guard")
        fleet = Fleet(args, env, command)
        fleet.start_all()
        return fleet

    def watch(
        self,
        fleet: Fleet,
        observed: Observed,
        reconciler: Reconciler | None,
        conn: psycopg.Connection[Any],
        started: float,
    ) -> bool:
        """Handles the workers' events and reconciles, until the queue is empty twice in a row;
        whether the run timed out first."""
        empty_polls = 0
        next_poll = 0.0
        while True:
            try:
                worker, event = fleet.events.get(timeout=0.1)
            except queue.Empty:
                worker, event = None, None
            if worker is not None:
                fleet.handle(worker, event, observed)
            now = time.monotonic()
            if now < next_poll:
                continue
            next_poll = now + 0.3
            if reconciler is not None:
                reconciler.run_once()
            if queue_length(conn, self.queue_name) == 0:
                empty_polls += 1
                if empty_polls >= 2:
                    return False
            else:
                empty_polls = 0
            if now - started > self.args.timeout_s:
                return True

    def close(self) -> None:
        """Stops the workers and the provider; removes the run's scratch directory."""
        if self.fleet is not None:
            self.fleet.stop()
        if self.provider_process is not None:
            self.provider_process.terminate()
            self.provider_process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    run = KycRun(parse_args(argv))
    try:
        return run.execute()
    finally:
        run.close()


if __name__ == "__main__":
    sys.exit(main())
