"""Misuse the client refuses or survives: a step object shared by threads and tasks, wrong
argument types, odd Retry-After values, deep nesting, keys that change between evaluations."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

import pytest

import idempo
from idempo import AsyncLedger, Ledger, OnPending
from idempo.canonical import MAX_DEPTH, JsonText, canonical_json
from idempo.consumer import Envelope
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


# --- 12: the step middleware, envelopes and the pool, as the engine and CLI have them ----------


def test_a_step_passes_its_target_to_the_claim(ledger: Ledger) -> None:
    @ledger.step("charge", target_arg="order_id")
    def charge(run_id: str, order_id: str) -> int:
        return 1

    charge("run-12", "o-1")
    op = ledger.show("run-12:charge:o-1")
    assert (op.run_id, op.step_id, op.target) == ("run-12", "charge", "o-1")
    with ledger.step("mail", run_id="run-12", target="c-1", payload={}) as step:
        step.result = 1
    assert ledger.show("run-12:mail:c-1").target == "c-1"


@pytest.mark.parametrize("produced_at", [-5, -5.0, 1e300, 2.0**63, 2**63, 1.5, "1", True, None])
def test_envelopes_follow_the_engines_rules_for_produced_at(produced_at: Any) -> None:
    message = Envelope("r", "s", "a", "b", {}, 1, "r:s").as_message()
    assert Envelope.from_message(message) is not None
    assert Envelope.from_message({**message, "produced_at": 1e3}) is not None
    assert Envelope.from_message({**message, "produced_at": 2**63 - 1}) is not None
    assert Envelope.from_message({**message, "produced_at": produced_at}) is None
    with pytest.raises(idempo.InvalidArgument, match="produced_at"):
        Envelope("r", "s", "a", "b", {}, produced_at, "r:s")
    with pytest.raises(idempo.InvalidArgument, match="run_id"):
        Envelope("", "s", "a", "b", {}, 1, "r:s")


def test_a_step_refuses_at_decoration_what_its_calls_could_not_key(ledger: Ledger) -> None:
    with pytest.raises(idempo.InvalidArgument, match="run_id"):

        @ledger.step("a")
        def no_run(order_id: str) -> None: ...

    with pytest.raises(idempo.InvalidArgument, match="order"):

        @ledger.step("b", target_arg="order")
        def no_target(run_id: str) -> None: ...

    with pytest.raises(idempo.InvalidArgument, match="payload_of"):

        class Svc:
            @ledger.step("c")
            def call(self, run_id: str) -> None: ...

    class Svc2:
        @ledger.step("d", payload_of=lambda self, run_id: {"run": run_id})
        def call(self, run_id: str) -> int:
            return 4

    assert Svc2().call("run-12") == 4


def test_a_key_function_must_return_a_str(ledger: Ledger) -> None:
    @ledger.step("e", key=lambda run_id: 5)
    def call(run_id: str) -> None: ...

    with pytest.raises(idempo.InvalidArgument, match="key function returned a int"):
        call("run-12")


def test_a_colon_in_a_run_or_step_id_is_refused_as_ambiguous(ledger: Ledger) -> None:
    # "r:s" + step "x" and "r" + step "s:x" would share the key "r:s:x".
    @ledger.step("x")
    def call(run_id: str) -> None: ...

    with pytest.raises(idempo.InvalidArgument, match="':'"):
        call("r:s")
    with pytest.raises(idempo.InvalidArgument, match="':'"):
        ledger.step("s:x")
    with ledger.step("y", run_id="r", target="a:b", payload={}) as step:
        step.result = 1  # after a step id without ':', a target may hold one
    assert ledger.show("r:y:a:b").target == "a:b"


def test_an_unclosed_ledger_and_the_pool_say_nothing_on_stderr(worker_url: str, ns: str) -> None:
    script = (
        "import gc, logging, sys\n"
        "from idempo import Ledger\n"
        "led = Ledger(sys.argv[1], namespace=sys.argv[2])\n"
        "led.claim('run-12:noise', {})\n"
        "logging.getLogger('psycopg.pool').warning('a pool warning')\n"
        "del led\n"
        "gc.collect()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, worker_url, ns],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")


# --- 9: a key function that changes between evaluations is refused ------------------------------


@pytest.mark.parametrize(
    "key",
    [
        lambda run_id: f"{run_id}:uu:{uuid.uuid4()}",
        lambda run_id: f"{run_id}:t:{time.time_ns()}",
    ],
    ids=["uuid4", "time_ns"],
)
def test_a_key_function_giving_another_key_for_the_same_arguments_is_refused(
    ledger: Ledger, key: Any
) -> None:
    calls: list[str] = []

    @ledger.step("k", key=key)
    def call(run_id: str) -> None:
        calls.append(run_id)

    with pytest.raises(idempo.InvalidArgument, match="never of a clock or a fresh UUID"):
        call("run-9")
    assert calls == []


def test_a_key_function_of_the_arguments_is_evaluated_twice_and_accepted(ledger: Ledger) -> None:
    evaluated: list[str] = []

    def key(run_id: str) -> str:
        evaluated.append(run_id)
        return f"{run_id}:k"

    @ledger.step("k", key=key)
    def call(run_id: str) -> int:
        return 9

    assert call("run-9") == 9
    assert evaluated == ["run-9", "run-9"]
