"""The consumer SIGKILLed at each crash point, in real processes: never a repeated effect."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from idempo import Ledger
from idempo.consumer import CRASH_POINTS, Envelope

HERE = Path(__file__).resolve().parent


def start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / "consumer_process.py"), *args],
        stdout=subprocess.PIPE,
        text=True,
    )


def make_queue(owner_url: str) -> str:
    name = "pyc_" + uuid.uuid4().hex[:10]
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("SELECT * FROM idempo.queue_create(%s, 10)", (name,))
    return name


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_killed_consumer_never_repeats_an_effect(
    point: str, ledger: Ledger, ledger_ready: str, worker_url: str, tmp_path: Path
) -> None:
    queue, next_queue = make_queue(ledger_ready), make_queue(ledger_ready)
    effects = tmp_path / "effects"
    effects.touch()
    envelope = Envelope("run-k", "charge", "planner", "payer", {"amount": 5}, 1, "run-k:charge")
    ledger.send(queue, envelope.as_message())
    ledger.send(queue, envelope.as_message())  # a duplicate send of the same step
    args = [worker_url, ledger.namespace, queue, next_queue, str(effects)]

    crashing = start([*args, point])
    assert crashing.stdout is not None
    assert crashing.stdout.readline().strip() == f"crash {point}"
    crashing.send_signal(signal.SIGKILL)
    crashing.wait(10)

    survivor = start(args)
    out, _ = survivor.communicate(timeout=60)
    assert survivor.returncode == 0 and out.strip().endswith("idle"), out

    lines = effects.read_text().split()
    state = ledger.show("run-k:charge").state
    following = ledger.read(next_queue, 30_000, 10)
    if point == "after_effect":
        # The effect happened and went unrecorded: a protected write is reconciled, never re-run.
        assert lines == ["run-k:charge"]
        assert state in ("dispatching", "unknown_outcome")
        assert following == []
    else:
        assert lines == ["run-k:charge"]
        assert state == "succeeded"
        assert [m.message["idempotency_key"] for m in following] == ["run-k:notify"]
        assert ledger.read(queue, 0, 10) == []
