"""A worker process of the KYC example: onboarding requests from an Idempo queue, each run
through the LangGraph graph (kyc_graph.py) under the thread of its run.

    python kyc_worker.py --ledger URL --namespace NS --queue Q --provider URL \
        --checkpoints CONNINFO --owner ID [--no-guard]

With the ledger, an ``idempo.consumer.Consumer`` claims each envelope's key (an idempotent write:
the graph's own steps are guarded, so a run whose worker died is run again), runs the graph and
acknowledges the delivery last. A redelivered request runs the graph again from its start, as
LangGraph does for new input on a thread: the compliance decision is then replayed from the
ledger and the account is never opened twice. ``--no-guard`` reads, runs and acks with no claim.

Events go to stdout, one JSON object a line: ``ready``, ``model``, ``account``, ``crash``,
``done``, ``exit``. The fault hook: with ``KYC_CRASH_AT=after_account`` and the clients named in
``KYC_CRASH_CLIENTS`` (comma-separated), the worker prints a ``crash`` line right after the
provider opened such a client's account and blocks until its parent SIGKILLs it; each client
crashes once (a marker in ``KYC_CRASH_DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from idempo import Ledger
from idempo.consumer import Consumer, Envelope
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row

from kyc_graph import Agents, Onboarding, Provider, build_graph

_print_lock = threading.Lock()


def emit(event: dict[str, Any]) -> None:
    with _print_lock:
        print(json.dumps(event), flush=True)


class CrashHook:
    """Blocks at the configured crash point for the configured clients, once per client."""

    def __init__(self) -> None:
        self.point = os.environ.get("KYC_CRASH_AT", "")
        self.clients = set(filter(None, os.environ.get("KYC_CRASH_CLIENTS", "").split(",")))
        self.markers = Path(os.environ.get("KYC_CRASH_DIR", "."))

    def __call__(self, point: str, client: str) -> None:
        if point != self.point or client not in self.clients:
            return
        try:
            (self.markers / client).touch(exist_ok=False)
        except FileExistsError:
            return  # this client crashed once already
        emit({"event": "crash", "point": point, "client": client, "pid": os.getpid()})
        while True:  # the parent sends SIGKILL
            time.sleep(60)


def onboarding_input(envelope: Envelope) -> Onboarding:
    payload = envelope.payload
    return {
        "run_id": envelope.run_id,
        "client_ref": payload["client_ref"],
        "name": payload["name"],
        "documents": payload["documents"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A worker of the KYC onboarding example.")
    parser.add_argument("--ledger", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--provider", required=True, help="the provider's base URL")
    parser.add_argument("--checkpoints", required=True, help="conninfo of the checkpointer")
    parser.add_argument("--owner", required=True, help="this worker's lease owner name")
    parser.add_argument("--no-guard", action="store_true")
    parser.add_argument("--vt-ms", type=int, default=5_000)
    parser.add_argument("--lease-ms", type=int, default=3_000)
    args = parser.parse_args(argv)

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())

    ledger = Ledger(args.ledger, namespace=args.namespace, owner=args.owner, max_size=2)
    agents = Agents(
        None if args.no_guard else ledger,
        Provider(args.provider),
        emit=emit,
        fault=CrashHook(),
        lease_ms=args.lease_ms,
    )
    with psycopg.Connection.connect(
        args.checkpoints, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        graph = build_graph(agents, PostgresSaver(conn))

        def onboard(envelope: Envelope) -> dict[str, Any]:
            config: RunnableConfig = {"configurable": {"thread_id": envelope.run_id}}
            try:
                state = graph.invoke(onboarding_input(envelope), config, durability="sync")
            except Exception as error:
                # Work-around: Consumer acknowledges a delivery after nacking it when the handler
                # raises (the bug being fixed in idempo/consumer.py), which would lose the request.
                # So nothing escapes: the worker ends without an ack, its lease lapses and the
                # delivery comes back after its visibility timeout. The step already recorded
                # the failure (a protected write's as unknown_outcome, for reconciliation).
                emit(
                    {
                        "event": "error",
                        "client": envelope.payload.get("client_ref"),
                        "error": f"{type(error).__name__}: {error}",
                    }
                )
                os._exit(70)
            account = state["account"]
            emit({"event": "done", "client": state["client_ref"], "account": account})
            return {"account_id": account["account_id"], "risk": state["decision"]["risk"]}

        consumer = Consumer(
            ledger,
            args.queue,
            onboard,
            tool_kind="idempotent_write",
            vt_ms=args.vt_ms,
            lease_ms=args.vt_ms,
        )
        emit({"event": "ready", "pid": os.getpid(), "owner": args.owner})
        while not stopping.is_set():
            if args.no_guard:
                busy = unguarded_one(ledger, args.queue, args.vt_ms, onboard)
            else:
                busy = consumer.process_one()
            if not busy:
                stopping.wait(0.1)
    ledger.close()
    emit({"event": "exit", "pid": os.getpid()})
    return 0


def unguarded_one(ledger: Ledger, queue: str, vt_ms: int, onboard: Any) -> bool:
    """One delivery without the ledger: read, run the graph, ack."""
    messages = ledger.read(queue, vt_ms, 1)
    if not messages:
        return False
    message = messages[0]
    envelope = Envelope.from_message(message.message)
    if envelope is not None:
        onboard(envelope)
    ledger.ack(queue, message.msg_id, message.read_ct)
    return True


if __name__ == "__main__":
    sys.exit(main())
