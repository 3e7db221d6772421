"""Misuse the client refuses or survives: a step object shared by threads and tasks, wrong
argument types, odd Retry-After values, deep nesting, keys that change between evaluations."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import idempo
from idempo import AsyncLedger, Ledger, OnPending
from idempo.canonical import MAX_DEPTH, JsonText, canonical_json
from idempo.outcomes import Claimed
from idempo.step import DEFAULT_ERRORS, MAX_RETRY_AFTER_MS, Classified

# --- 7: a Step object's blocks keep their own state --------------------------------------------


def test_a_step_object_shared_by_two_threads_records_each_block_itself(ledger: Ledger) -> None:
    step = ledger.step("mail", run_id="run-7", payload={"to": "c"}, on_pending=OnPending.RETURN)
    entered, other_done = threading.Event(), threading.Event()
    seen: list[bool] = []

    def holder() -> None:
        with step as handle:
            seen.append(handle.should_run)
            handle.result = {"sent": True}
            entered.set()
            other_done.wait(10)

    def other() -> None:
        entered.wait(10)
        with step as handle:  # the holder has the lease: a Pending marker, nothing to record
            seen.append(handle.should_run)
        other_done.set()

    threads = [threading.Thread(target=holder), threading.Thread(target=other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert seen == [True, False]
    op = ledger.show("run-7:mail")
    assert (op.state, op.result_value()) == ("succeeded", {"sent": True})


def test_an_async_step_object_shared_by_two_tasks_records_each_block_itself(
    worker_url: str, ns: str
) -> None:
    async def main() -> None:
        async with await AsyncLedger.connect(worker_url, namespace=ns, owner="pytest") as ledger:
            step = ledger.step("mail", run_id="run-8", payload={}, on_pending=OnPending.RETURN)
            entered, other_done = asyncio.Event(), asyncio.Event()

            async def holder() -> None:
                async with step as handle:
                    assert handle.should_run
                    handle.result = {"sent": 1}
                    entered.set()
                    await other_done.wait()

            async def other() -> None:
                await entered.wait()
                async with step as handle:
                    assert not handle.should_run
                other_done.set()

            await asyncio.gather(holder(), other())
            op = await ledger.show("run-8:mail")
            assert (op.state, op.result_value()) == ("succeeded", {"sent": 1})

    asyncio.run(main())


# --- 8: wrong argument types are refused up front, naming the argument --------------------------


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda led: led.claim(None, {}), "key"),
        (lambda led: led.claim(5, {}), "key"),
        (lambda led: led.claim(b"abc", {}), "key"),
        (lambda led: led.claim("k", {}, lease_ms=1.5), "lease_ms"),
        (lambda led: led.claim("k", {}, lease_ms="100"), "lease_ms"),
        (lambda led: led.claim("k", {}, tool_kind=None), "tool_kind"),
        (lambda led: led.claim("k", {}, run_id=None), "run_id"),
        (lambda led: led.claim("k", {}, fingerprint_fields="/a"), "fingerprint_fields"),
        (lambda led: led.complete("k", None), "token"),
        (lambda led: led.complete("k", "1"), "token"),
        (lambda led: led.fail("k", 1, None), "error_class"),
        (lambda led: led.read("q", 1000, ack=[("a", 1)]), "ack"),
        (lambda led: led.show(None), "key"),
    ],
)
def test_wrong_types_are_invalid_arguments_naming_the_argument(
    ledger: Ledger, call: Any, named: str
) -> None:
    with pytest.raises(idempo.InvalidArgument, match=named):
        call(ledger)


def test_a_ledger_refuses_a_conninfo_or_namespace_of_another_type(worker_url: str) -> None:
    with pytest.raises(idempo.InvalidArgument, match="conninfo"):
        Ledger(None)  # type: ignore[arg-type]
    with pytest.raises(idempo.InvalidArgument, match="namespace"):
        Ledger(worker_url, namespace=None)  # type: ignore[arg-type]


def test_a_step_refuses_a_none_run_id(ledger: Ledger) -> None:
    @ledger.step("charge")
    def charge(run_id: str | None) -> int:
        return 1

    with pytest.raises(idempo.InvalidArgument, match="run_id"):
        charge(None)
    with pytest.raises(idempo.NotFound):
        ledger.show("None:charge")


# --- 10: a Retry-After of any shape is read safely ---------------------------------------------


class Limited(Exception):
    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__("HTTP 429")
        self.status_code = 429
        self.headers = headers


@pytest.mark.parametrize(
    ("headers", "wait_ms"),
    [
        ({"Retry-After": "inf"}, MAX_RETRY_AFTER_MS),
        ({"Retry-After": "1e12"}, MAX_RETRY_AFTER_MS),
        ({"Retry-After": "1e400"}, MAX_RETRY_AFTER_MS),
        ({"Retry-After": "nan"}, None),
        ({"Retry-After": "-3"}, 0),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, None),
        ({"retry-after": "2"}, 2000),
        ({"RETRY-AFTER": " 1.5 "}, 1500),
    ],
)
def test_retry_after_is_clamped_and_found_in_any_case(
    headers: dict[str, str], wait_ms: int | None
) -> None:
    found = DEFAULT_ERRORS.classify(Limited(headers), "protected_write")
    assert found == Classified("rate_limited", wait_ms)


def test_an_infinite_retry_after_is_recorded(ledger: Ledger) -> None:
    @ledger.step("call", tool_kind="read")
    def call(run_id: str) -> None:
        raise Limited({"retry-after": "inf"})

    with pytest.raises(Limited):
        call("run-10")
    op = ledger.show("run-10:call")
    assert (op.state, op.error_class) == ("failed_retryable", "rate_limited")
    assert op.next_attempt_at_ms is not None
    assert op.next_attempt_at_ms - op.updated_at_ms == MAX_RETRY_AFTER_MS


# --- 11: nesting as deep as the engine allows, and no deeper, without a RecursionError ---------


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_nesting_up_to_the_engines_limit_is_claimed(ledger: Ledger) -> None:
    assert MAX_DEPTH == 512  # kMaxDepth in services/core/canonicaljson.cpp
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert isinstance(ledger.claim("run-11:text", JsonText(text)), Claimed)
    assert isinstance(ledger.claim("run-11:value", {"a": _nested(MAX_DEPTH - 1)}), Claimed)
    assert ledger.show("run-11:value").payload == canonical_json({"a": _nested(MAX_DEPTH - 1)})


@pytest.mark.parametrize(
    "payload",
    [
        JsonText("[" * 513 + "]" * 513),
        JsonText("[" * 100_000 + "]" * 100_000),
        _nested(513),
        _nested(100_000),
    ],
    ids=["text-513", "text-100000", "value-513", "value-100000"],
)
def test_deeper_nesting_is_invalid_json_not_a_recursion_error(ledger: Ledger, payload: Any) -> None:
    with pytest.raises(idempo.InvalidJson, match="nesting deeper than 512 levels"):
        ledger.claim("run-11:deep", payload)
