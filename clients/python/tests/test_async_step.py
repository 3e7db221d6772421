"""Step middleware on the asyncio client: the sync tests that matter, via ``AsyncLedger.step``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import idempo
from idempo import AsyncLedger, OnPending, Pending, StepFailed, StepPending
from idempo.step import ErrorMap

from .test_step import HttpError, QuotaError


def with_ledger(url: str, ns: str, body: Callable[[AsyncLedger], Awaitable[None]]) -> None:
    async def main() -> None:
        async with await AsyncLedger.connect(url, namespace=ns, owner="pytest-async") as ledger:
            await body(ledger)

    asyncio.run(main())


def test_runs_once_and_replays_the_result(worker_url: str, ns: str) -> None:
    calls: list[str] = []

    async def body(ledger: AsyncLedger) -> None:
        @ledger.step("charge", target_arg="order_id")
        async def charge(run_id: str, order_id: str, amount: int) -> dict[str, Any]:
            calls.append(order_id)
            await asyncio.sleep(0)
            return {"charge": f"ch_{order_id}", "amount": amount}

        first = await charge("run-1", "o-7", 1250)
        assert await charge("run-1", "o-7", 1250) == first == {"charge": "ch_o-7", "amount": 1250}
        op = await ledger.show("run-1:charge:o-7")
        assert (op.state, op.run_id, op.step_id, op.result_value()) == (
            "succeeded",
            "run-1",
            "charge",
            first,
        )
        with pytest.raises(idempo.StepConflict):
            await charge("run-1", "o-7", 9999)

    with_ledger(worker_url, ns, body)
    assert calls == ["o-7"]


def test_terminal_error_is_raised_again_without_running(worker_url: str, ns: str) -> None:
    calls = 0

    async def body(ledger: AsyncLedger) -> None:
        @ledger.step("kyc")
        async def kyc(run_id: str) -> None:
            nonlocal calls
            calls += 1
            raise ValueError("document unreadable")

        with pytest.raises(ValueError, match="unreadable"):
            await kyc("run-2")
        with pytest.raises(StepFailed) as failed:
            await kyc("run-2")
        assert failed.value.error_class == "validation"
        assert "document unreadable" in failed.value.detail

    with_ledger(worker_url, ns, body)
    assert calls == 1


@pytest.mark.parametrize(
    ("error", "state"),
    [
        (TimeoutError("slow"), "failed_retryable"),
        (HttpError(429, {"Retry-After": "2"}), "failed_retryable"),
        (HttpError(401), "failed_terminal"),
        (RuntimeError("lost"), "unknown_outcome"),
        (QuotaError("quota"), "failed_terminal"),
    ],
)
def test_each_error_class_is_recorded(
    worker_url: str, ns: str, error: BaseException, state: str
) -> None:
    errors = ErrorMap().extend({QuotaError: "policy_denied"})

    async def body(ledger: AsyncLedger) -> None:
        @ledger.step("call", errors=errors)
        async def call(run_id: str) -> None:
            raise error

        with pytest.raises(type(error)):
            await call("run-3")
        op = await ledger.show("run-3:call")
        assert op.state == state
        assert op.error_class == errors.classify(error, "protected_write").error_class
        if isinstance(error, HttpError) and error.status_code == 429:
            assert op.next_attempt_at_ms - op.updated_at_ms >= 1900

    with_ledger(worker_url, ns, body)


def test_read_decision_recorded_once(worker_url: str, ns: str) -> None:
    decisions = iter(["approve", "reject"])

    async def body(ledger: AsyncLedger) -> None:
        @ledger.step("decide", tool_kind="read")
        async def decide(run_id: str, customer: str) -> str:
            return next(decisions)

        assert await decide("run-4", "c-1") == "approve"
        assert await decide("run-4", "c-1") == "approve"

    with_ledger(worker_url, ns, body)


def test_pending_policies(worker_url: str, ns: str) -> None:
    async def body(ledger: AsyncLedger) -> None:
        holder = await ledger.claim(
            "run-5:slow", {"run_id": "run-5"}, run_id="run-5", step_id="slow", lease_ms=60_000
        )
        assert isinstance(holder, idempo.Claimed)

        async def slow(run_id: str) -> str:
            return "ran"

        with pytest.raises(StepPending) as pending:
            await ledger.step("slow")(slow)("run-5")
        assert isinstance(pending.value.outcome, idempo.InProgress)
        marker = await ledger.step("slow", on_pending=OnPending.RETURN)(slow)("run-5")
        assert isinstance(marker, Pending) and marker.key == "run-5:slow"

        started = time.monotonic()
        with pytest.raises(StepPending):
            await ledger.step("slow", on_pending=OnPending.WAIT, deadline_s=0.5)(slow)("run-5")
        assert time.monotonic() - started >= 0.5

        async def finish() -> None:
            await asyncio.sleep(0.3)
            await ledger.complete("run-5:slow", holder.token, "done by the holder")

        waiting = ledger.step("slow", on_pending=OnPending.WAIT)(slow)("run-5")
        _, answer = await asyncio.gather(finish(), waiting)
        assert answer == "done by the holder"

    with_ledger(worker_url, ns, body)


def test_wait_through_retry_later(worker_url: str, ns: str) -> None:
    attempts = 0

    async def body(ledger: AsyncLedger) -> None:
        @ledger.step("flaky", on_pending=OnPending.WAIT, deadline_s=10)
        async def flaky(run_id: str) -> int:
            nonlocal attempts
            attempts += 1
            if attempts == 1:
                raise TimeoutError("first attempt times out")
            return attempts

        with pytest.raises(TimeoutError):
            await flaky("run-6")
        assert await flaky("run-6") == 2

    with_ledger(worker_url, ns, body)


def test_async_with(worker_url: str, ns: str) -> None:
    runs = 0

    async def body(ledger: AsyncLedger) -> None:
        nonlocal runs
        for _ in range(2):
            step = ledger.step("mail", run_id="run-7", target="c-9", payload={"to": "c-9"})
            async with step as handle:
                if handle.should_run:
                    runs += 1
                    handle.result = {"sent": True}
            assert handle.result == {"sent": True}
        with pytest.raises(ZeroDivisionError):
            async with ledger.step("boom", run_id="run-7", payload={}) as boom:
                assert boom.should_run
                _ = 1 / 0
        assert (await ledger.show("run-7:boom")).state == "unknown_outcome"

    with_ledger(worker_url, ns, body)
    assert runs == 1


def test_heartbeat_keeps_the_lease(worker_url: str, ns: str) -> None:
    async def body(ledger: AsyncLedger) -> None:
        @ledger.step("long", lease_ms=600, tool_kind="read")
        async def long(run_id: str) -> str:
            await asyncio.sleep(1.5)
            return "ok"

        assert await long("run-8") == "ok"
        history = await ledger.history("run-8:long")
        assert len([e for e in history if e.detail == "heartbeat"]) >= 3
        assert (await ledger.show("run-8:long")).state == "succeeded"

    with_ledger(worker_url, ns, body)


def test_heartbeat_extends_the_lease_of_a_long_step(worker_url: str, ns: str) -> None:
    seen: list[idempo.ClaimOutcome] = []

    async def body(ledger: AsyncLedger) -> None:
        async with await AsyncLedger.connect(worker_url, namespace=ns, owner="rival") as rival:

            @ledger.step("long", lease_ms=600, tool_kind="idempotent_write")
            async def long(run_id: str) -> str:
                for _ in range(3):
                    await asyncio.sleep(0.4)  # past the claim's lease at the second round
                    seen.append(await rival.claim("run-10:long", {"run_id": run_id}, lease_ms=600))
                return "ok"

            assert await long("run-10") == "ok"
        assert (await ledger.show("run-10:long")).state == "succeeded"

    with_ledger(worker_url, ns, body)
    assert [type(o) for o in seen] == [idempo.InProgress] * 3


def test_quick_steps_send_no_heartbeat_and_leave_no_task(worker_url: str, ns: str) -> None:
    async def body(ledger: AsyncLedger) -> None:
        @ledger.step("quick", lease_ms=3000, tool_kind="idempotent_write")
        async def quick(run_id: str, n: int) -> int:
            return n

        def beats() -> list[asyncio.Task[Any]]:
            return [t for t in asyncio.all_tasks() if t.get_name().startswith("heartbeat")]

        for n in range(200):
            assert await quick(f"run-11-{n}", n) == n
        assert beats() == []
        await asyncio.sleep(1.2)  # past the first beat's time: cancelled timers stay unsent
        assert beats() == []
        for n in range(0, 200, 10):
            history = await ledger.history(f"run-11-{n}:quick")
            assert [e.detail for e in history].count("heartbeat") == 0

    with_ledger(worker_url, ns, body)


def test_sync_function_refused(worker_url: str, ns: str) -> None:
    async def body(ledger: AsyncLedger) -> None:
        def plain(run_id: str) -> None:
            return None

        with pytest.raises(TypeError, match="async functions"):
            ledger.step("plain")(plain)  # type: ignore[arg-type]

    with_ledger(worker_url, ns, body)
