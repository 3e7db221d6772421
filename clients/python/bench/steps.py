"""Steps per second: Idempo's step middleware beside the same two SQL calls sent bare through
psycopg, and beside DBOS Transact's ``@DBOS.step``, on one PostgreSQL server in one run.

    python clients/python/bench/steps.py --url postgresql://USER@HOST:PORT/DB \\
        [--workers 1,8,32] [--steps 1,10] [--rounds 3] [--seconds 5]

The ledger must exist in DB (``idempo --ledger URL init``); DBOS keeps its system database in
``DB_dbos`` on the same server (made by DBOS). Every measurement runs in a fresh process (so
DBOS's background threads never run beside the other columns), with W threads each running
workflows of K steps back to back: for 1 s unmeasured, then ``--seconds`` measured. A step is:

* ``middleware``: a call of a function decorated with ``Ledger.step`` (claim, the body, complete,
  through the client's pool of W connections; heartbeats from the ledger's scheduler, as in use);
* ``bare``: ``idempo.claim`` then ``idempo.complete`` with the same arguments, written by hand on
  one psycopg connection per thread (no pool, no client);
* ``dbos``: a ``@DBOS.step`` inside a ``@DBOS.workflow`` called in the thread (its system database
  pool sized W + 5).

Rounds alternate the order of the three columns. The figures are the median over the rounds of
steps per second, with the ratios of the middleware to bare and to DBOS. Bench requirements (not in
CI's venv): ``clients/python/bench/requirements.txt``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable

KINDS = ("bare", "middleware", "dbos")
WARMUP_S = 1.0


def _drive(workers: int, seconds: float, workflow: Callable[[int, int], int]) -> float:
    """Runs ``workflow(worker, n)`` (it answers the steps it made) in W threads; steps per second
    over the measured window."""
    done = [0] * workers
    stop = threading.Event()
    failures: list[BaseException] = []

    def loop(worker: int) -> None:
        n = 0
        try:
            while not stop.is_set():
                done[worker] += workflow(worker, n)
                n += 1
        except BaseException as error:
            failures.append(error)
            stop.set()

    threads = [threading.Thread(target=loop, args=(w,), daemon=True) for w in range(workers)]
    for thread in threads:
        thread.start()
    time.sleep(WARMUP_S)
    first, started = sum(done), time.perf_counter()
    time.sleep(seconds)
    last, ended = sum(done), time.perf_counter()
    stop.set()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return (last - first) / (ended - started)


def _middleware(url: str, workers: int, steps: int, seconds: float) -> float:
    from idempo import Ledger

    tag = uuid.uuid4().hex[:8]
    with Ledger(url, namespace=f"bench-mw-{tag}", min_size=workers, max_size=workers) as ledger:
        bodies = []
        for i in range(steps):

            @ledger.step(f"s{i}", tool_kind="idempotent_write")
            def body(run_id: str, n: int) -> dict[str, int]:
                return {"n": n}

            bodies.append(body)

        def workflow(worker: int, n: int) -> int:
            run_id = f"{tag}-{worker}-{n}"
            for i, body in enumerate(bodies):
                body(run_id, i)
            return steps

        return _drive(workers, seconds, workflow)


CLAIM = (
    "SELECT * FROM idempo.claim(p_namespace => %s, p_key => %s, p_payload => %s, "
    "p_payload_sha256 => %s, p_owner => %s, p_tool_kind => %s, p_lease_ms => %s, "
    "p_run_id => %s, p_step_id => %s)"
)
COMPLETE = (
    "SELECT * FROM idempo.complete(p_namespace => %s, p_key => %s, p_fencing_token => %s, "
    "p_result => %s, p_actor => %s)"
)


def _bare(url: str, workers: int, steps: int, seconds: float) -> float:
    import psycopg

    tag = uuid.uuid4().hex[:8]
    namespace = f"bench-bare-{tag}"
    owner = f"bench:{os.getpid()}"
    connections = [psycopg.connect(url, autocommit=True) for _ in range(workers)]

    def workflow(worker: int, n: int) -> int:
        conn = connections[worker]
        run_id = f"{tag}-{worker}-{n}"
        for i in range(steps):
            key = f"{run_id}:s{i}"
            payload = json.dumps({"n": i, "run_id": run_id}, separators=(",", ":"))
            digest = hashlib.sha256(payload.encode()).hexdigest()
            args = (namespace, key, payload, digest, owner, "idempotent_write", 30000, run_id)
            row = conn.execute(CLAIM, (*args, f"s{i}")).fetchone()
            assert row is not None and row[0] == "claimed", row
            token = row[16]
            conn.execute(COMPLETE, (namespace, key, token, json.dumps({"n": i}), owner)).fetchone()
        return steps

    try:
        return _drive(workers, seconds, workflow)
    finally:
        for conn in connections:
            conn.close()


def _dbos(url: str, workers: int, steps: int, seconds: float) -> float:
    import logging

    from dbos import DBOS

    logging.getLogger("dbos").setLevel(logging.WARNING)
    base, _, dbname = url.rpartition("/")
    DBOS(
        config={
            "name": "idempo-bench",
            "system_database_url": f"{base}/{dbname}_dbos",
            "sys_db_pool_size": workers + 5,
            "log_level": "WARNING",
            "max_executor_threads": workers + 5,
        }
    )

    @DBOS.step()
    def body(n: int) -> dict[str, int]:
        return {"n": n}

    @DBOS.workflow()
    def run(k: int) -> int:
        for i in range(k):
            body(i)
        return k

    DBOS.launch()
    try:
        return _drive(workers, seconds, lambda worker, n: run(steps))
    finally:
        DBOS.destroy()


def measure(kind: str, url: str, workers: int, steps: int, seconds: float) -> float:
    """One measurement in a fresh process: steps per second."""
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--one",
            kind,
            "--url",
            url,
            "--workers",
            str(workers),
            "--steps",
            str(steps),
            "--seconds",
            str(seconds),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{kind} W={workers} K={steps} failed:\n{done.stderr[-3000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["rate"])


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the ledger's database (a libpq URI)")
    parser.add_argument("--workers", default="1,8,32")
    parser.add_argument("--steps", default="1,10", help="steps per workflow")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--one", choices=KINDS, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.one:
        run = {"bare": _bare, "middleware": _middleware, "dbos": _dbos}[args.one]
        rate = run(args.url, int(args.workers), int(args.steps), args.seconds)
        print(json.dumps({"rate": rate}))
        return 0

    results: dict[tuple[int, int, str], list[float]] = {}
    loads: list[float] = []
    for r in range(args.rounds):
        order = KINDS[r % 3 :] + KINDS[: r % 3]
        for steps in _ints(args.steps):
            for workers in _ints(args.workers):
                for kind in order:
                    rate = measure(kind, args.url, workers, steps, args.seconds)
                    results.setdefault((steps, workers, kind), []).append(rate)
                    load = os.getloadavg()[0]
                    loads.append(load)
                    print(
                        f"round {r + 1} K={steps:<2} W={workers:<2} {kind:<10} {rate:9.0f} steps/s"
                        f"  (load {load:.2f})",
                        file=sys.stderr,
                        flush=True,
                    )

    print(
        "| steps/workflow | workers | bare claim+complete | middleware | DBOS @DBOS.step "
        "| middleware / bare | middleware / DBOS |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for steps in _ints(args.steps):
        for workers in _ints(args.workers):
            runs = {k: results[(steps, workers, k)] for k in KINDS}
            med = {k: statistics.median(runs[k]) for k in KINDS}
            spread = {k: f"{min(runs[k]):.0f}-{max(runs[k]):.0f}" for k in KINDS}
            print(
                f"| {steps} | {workers} | {med['bare']:.0f} ({spread['bare']}) "
                f"| {med['middleware']:.0f} ({spread['middleware']}) "
                f"| {med['dbos']:.0f} ({spread['dbos']}) "
                f"| {med['middleware'] / med['bare']:.2f} | {med['middleware'] / med['dbos']:.2f} |"
            )
    print(
        f"\n1-minute load average during the run: {min(loads):.2f} to {max(loads):.2f} "
        f"(median {statistics.median(loads):.2f}); {os.cpu_count()} CPUs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
