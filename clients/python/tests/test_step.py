"""Step middleware: runs once, records, replays, classifies, and follows its pending policy."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import idempo
from idempo import Ledger, OnPending, Pending, StepFailed, StepPending
from idempo.step import Classified, ErrorMap


class HttpError(Exception):
    def __init__(self, status_code: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code
        self.headers = headers or {}


def test_runs_once_and_replays_the_result(ledger: Ledger) -> None:
    calls: list[str] = []

    @ledger.step("charge", target_arg="order_id")
    def charge(run_id: str, order_id: str, amount: int) -> dict[str, Any]:
        calls.append(order_id)
        return {"charge": f"ch_{order_id}", "amount": amount}

    first = charge("run-1", "o-7", 1250)
    assert charge("run-1", "o-7", 1250) == first == {"charge": "ch_o-7", "amount": 1250}
    assert calls == ["o-7"]
    op = ledger.show("run-1:charge:o-7")
    assert (op.state, op.run_id, op.step_id, op.result_value()) == (
        "succeeded",
        "run-1",
        "charge",
        first,
    )
    with pytest.raises(idempo.StepConflict):
        charge("run-1", "o-7", 9999)


def test_terminal_error_is_raised_again_without_running(ledger: Ledger) -> None:
    calls = 0

    @ledger.step("kyc")
    def kyc(run_id: str) -> None:
        nonlocal calls
        calls += 1
        raise ValueError("document unreadable")

    with pytest.raises(ValueError, match="unreadable"):
        kyc("run-2")
    with pytest.raises(StepFailed) as failed:
        kyc("run-2")
    assert (failed.value.error_class, calls) == ("validation", 1)
    assert "document unreadable" in failed.value.detail


@pytest.mark.parametrize(
    ("error", "kind", "expected"),
    [
        (TimeoutError("slow"), "protected_write", Classified("transient")),
        (ConnectionResetError("reset"), "protected_write", Classified("transient")),
        (HttpError(429, {"Retry-After": "7"}), "protected_write", Classified("rate_limited", 7000)),
        (HttpError(503), "protected_write", Classified("transient")),
        (HttpError(403), "protected_write", Classified("auth")),
        (HttpError(422), "protected_write", Classified("validation")),
        (PermissionError("no"), "read", Classified("auth")),
        (KeyError("field"), "read", Classified("validation")),
        (RuntimeError("?"), "protected_write", Classified("unknown_outcome")),
        (RuntimeError("?"), "read", Classified("transient")),
    ],
)
def test_default_error_map(error: BaseException, kind: str, expected: Classified) -> None:
    assert idempo.step.DEFAULT_ERRORS.classify(error, kind) == expected


class QuotaError(Exception):
    pass


@pytest.mark.parametrize(
    ("error", "state"),
    [
        (TimeoutError("slow"), "failed_retryable"),
        (HttpError(429, {"Retry-After": "2"}), "failed_retryable"),
        (ValueError("bad"), "failed_terminal"),
        (HttpError(401), "failed_terminal"),
        (RuntimeError("lost"), "unknown_outcome"),
        (QuotaError("quota"), "failed_terminal"),
    ],
)
def test_each_error_class_is_recorded(ledger: Ledger, error: BaseException, state: str) -> None:
    errors = ErrorMap().extend({QuotaError: "policy_denied"})

    @ledger.step("call", errors=errors)
    def call(run_id: str) -> None:
        raise error

    with pytest.raises(type(error)):
        call("run-3")
    op = ledger.show("run-3:call")
    assert op.state == state
    expected = idempo.step.DEFAULT_ERRORS.extend({QuotaError: "policy_denied"}).classify(
        error, "protected_write"
    )
    assert op.error_class == expected.error_class
    if isinstance(error, HttpError) and error.status_code == 429:
        assert op.next_attempt_at_ms - op.updated_at_ms >= 1900


def test_read_decision_recorded_once(ledger: Ledger) -> None:
    decisions = iter(["approve", "reject"])

    @ledger.step("decide", tool_kind="read")
    def decide(run_id: str, customer: str) -> str:
        return next(decisions)

    assert decide("run-4", "c-1") == "approve"
    assert decide("run-4", "c-1") == "approve"  # a retried run never swaps the decision


def test_pending_policies(ledger: Ledger) -> None:
    holder = ledger.claim(
        "run-5:slow", {"run_id": "run-5"}, run_id="run-5", step_id="slow", lease_ms=60_000
    )
    assert isinstance(holder, idempo.Claimed)

    def slow(run_id: str) -> str:
        return "ran"

    with pytest.raises(StepPending) as pending:
        ledger.step("slow")(slow)("run-5")
    assert isinstance(pending.value.outcome, idempo.InProgress)
    marker = ledger.step("slow", on_pending=OnPending.RETURN)(slow)("run-5")
    assert isinstance(marker, Pending) and marker.key == "run-5:slow"

    started = time.monotonic()
    with pytest.raises(StepPending):
        ledger.step("slow", on_pending=OnPending.WAIT, deadline_s=0.5)(slow)("run-5")
    assert time.monotonic() - started >= 0.5
    ledger.complete("run-5:slow", holder.token, "done by the holder")
    assert ledger.step("slow", on_pending=OnPending.WAIT)(slow)("run-5") == "done by the holder"


def test_wait_through_retry_later(ledger: Ledger) -> None:
    attempts = 0

    @ledger.step("flaky", on_pending=OnPending.WAIT, deadline_s=10)
    def flaky(run_id: str) -> int:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise TimeoutError("first attempt times out")
        return attempts

    with pytest.raises(TimeoutError):
        flaky("run-6")
    assert flaky("run-6") == 2  # waited out the ledger's backoff, then ran again


def test_context_manager(ledger: Ledger) -> None:
    runs = 0
    for _ in range(2):
        with ledger.step("mail", run_id="run-7", target="c-9", payload={"to": "c-9"}) as step:
            if step.should_run:
                runs += 1
                step.result = {"sent": True}
        assert step.result == {"sent": True}
    assert runs == 1
    with pytest.raises(ZeroDivisionError), ledger.step("boom", run_id="run-7", payload={}) as s:
        assert s.should_run
        _ = 1 / 0
    assert ledger.show("run-7:boom").state == "unknown_outcome"


def test_heartbeat_keeps_the_lease(ledger: Ledger) -> None:
    @ledger.step("long", lease_ms=600, tool_kind="read")
    def long(run_id: str) -> str:
        time.sleep(1.5)
        return "ok"

    assert long("run-8") == "ok"
    beats = [e for e in ledger.history("run-8:long") if e.detail == "heartbeat"]
    assert len(beats) >= 3


def test_heartbeat_extends_the_lease_of_a_long_step(ledger: Ledger, worker_url: str) -> None:
    seen: list[idempo.ClaimOutcome] = []
    with Ledger(worker_url, namespace=ledger.namespace, owner="rival") as rival:

        @ledger.step("long", lease_ms=600, tool_kind="idempotent_write")
        def long(run_id: str) -> str:
            for _ in range(3):
                time.sleep(0.4)  # past the claim's lease at the second round
                seen.append(rival.claim("run-10:long", {"run_id": run_id}, lease_ms=600))
            return "ok"

        assert long("run-10") == "ok"
    assert [type(o) for o in seen] == [idempo.InProgress] * 3
    assert ledger.show("run-10:long").state == "succeeded"


def test_quick_steps_send_no_heartbeat(ledger: Ledger) -> None:
    @ledger.step("quick", lease_ms=3000, tool_kind="idempotent_write")
    def quick(run_id: str, n: int) -> int:
        return n

    for n in range(20):
        assert quick(f"run-11-{n}", n) == n
    time.sleep(1.2)  # past the first beat's time: cancelled beats stay unsent
    for n in range(20):
        assert [e.detail for e in ledger.history(f"run-11-{n}:quick")].count("heartbeat") == 0


def test_one_heartbeat_thread_per_ledger_stopped_by_close(worker_url: str, ns: str) -> None:
    before = set(threading.enumerate())
    with Ledger(worker_url, namespace=ns, owner="pytest") as ledger:

        @ledger.step("many", tool_kind="idempotent_write")
        def many(run_id: str, n: int) -> int:
            return n

        many("run-12", -1)
        during = set(threading.enumerate())
        beats = ledger._heartbeats.thread
        assert beats is not None and beats in during
        for n in range(1000):
            assert many(f"run-12-{n}", n) == n
        # No thread per step: the same threads as after the first step.
        assert set(threading.enumerate()) == during
        assert len(ledger._heartbeats._heap) <= 512
    assert not beats.is_alive()
    assert set(threading.enumerate()) <= before


def test_async_function(ledger: Ledger) -> None:
    calls = 0

    @ledger.step("fetch", tool_kind="idempotent_write")
    async def fetch(run_id: str, url: str) -> dict[str, str]:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        return {"url": url}

    assert asyncio.run(fetch("run-9", "https://x")) == {"url": "https://x"}
    assert asyncio.run(fetch("run-9", "https://x")) == {"url": "https://x"}
    assert calls == 1
