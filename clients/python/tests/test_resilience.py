"""The client through server restarts and outages, and the consumer's handling of failures: a
failed handler's delivery given back, a restart between or inside calls survived, a heartbeat
that keeps trying through an outage shorter than the lease."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from idempo import AsyncLedger, IdempoError, Ledger
from idempo.consumer import Consumer, Envelope
from idempo.outcomes import Claimed


@pytest.fixture
def server_ctl() -> Callable[[str], None]:
    ctl = os.environ.get("IDEMPO_TEST_POSTGRES_CTL", "")
    if not ctl:
        pytest.skip("IDEMPO_TEST_POSTGRES_CTL is not set (run through tests/pg/with-postgres.sh)")

    def run(action: str) -> None:
        subprocess.run([ctl, action], check=True, timeout=120)

    return run


@pytest.fixture
def small_ledger(worker_url: str, ns: str) -> Iterator[Ledger]:
    with Ledger(worker_url, namespace=ns, owner="pytest", min_size=3, max_size=3) as opened:
        yield opened


def envelope(key: str, payload: Any = None) -> dict[str, Any]:
    run_id, step_id = key.split(":", 1)
    return Envelope(run_id, step_id, "a", "b", payload or {"n": 1}, 1, key).as_message()


# --- 1: a failed handler's delivery is given back, never acked --------------------------------


def test_consumer_gives_back_a_retryable_failure_and_runs_it_again(
    ledger: Ledger, queue: str
) -> None:
    calls: list[str] = []

    def handler(env: Envelope) -> Any:
        calls.append(env.idempotency_key)
        if len(calls) == 1:
            raise ConnectionError("reset by peer")
        return {"ok": True}

    ledger.send(queue, envelope("run-r:charge"))
    consumer = Consumer(ledger, queue, handler, tool_kind="idempotent_write", vt_ms=30_000)
    assert consumer.process_one()
    op = ledger.show("run-r:charge")
    assert op.state == "failed_retryable"
    # Given back at the ledger's retry time, not deleted.
    deadline = time.monotonic() + 10
    while not consumer.process_one():
        assert time.monotonic() < deadline, "the failed delivery never came back"
        time.sleep(0.1)
    assert calls == ["run-r:charge", "run-r:charge"]
    assert ledger.show("run-r:charge").state == "succeeded"
    assert ledger.read(queue, 0, 10) == []


def test_consumer_acks_a_terminal_failure(ledger: Ledger, queue: str) -> None:
    def handler(env: Envelope) -> Any:
        raise ValueError("bad input")

    ledger.send(queue, envelope("run-t:charge"))
    assert Consumer(ledger, queue, handler).process_one()
    assert ledger.show("run-t:charge").state == "failed_terminal"
    assert ledger.read(queue, 0, 10) == []


# --- 2: restarts between and inside calls -----------------------------------------------------


def test_calls_survive_a_server_restart(
    small_ledger: Ledger, server_ctl: Callable[[str], None]
) -> None:
    ledger = small_ledger
    assert ledger.now_ms() > 0
    server_ctl("restart")
    # Every pooled connection broke: each is replaced before use, no call fails.
    for n in range(5):
        assert ledger.now_ms() > 0
        assert isinstance(ledger.claim(f"run-x:s{n}", {"n": n}), Claimed)


def test_step_completes_after_a_restart_during_its_body(
    small_ledger: Ledger, server_ctl: Callable[[str], None]
) -> None:
    effects: list[int] = []

    @small_ledger.step("charge")
    def charge(run_id: str, amount: int) -> dict[str, int]:
        effects.append(amount)
        server_ctl("restart")
        return {"charged": amount}

    assert charge("run-restart", 5) == {"charged": 5}
    assert charge("run-restart", 5) == {"charged": 5}
    assert effects == [5]
    assert small_ledger.show("run-restart:charge").state == "succeeded"


def lose_first_answer(ledger: Ledger, function: str) -> list[int]:
    """Makes the first call of ``idempo.<function>`` apply, then lose its answer, as a connection
    broken after the commit would."""
    real = ledger._rows
    lost: list[int] = []

    def rows(sql: str, params: Any, timeout: float | None = None) -> Any:
        answer = real(sql, params, timeout)
        if f"idempo.{function}(" in sql and not lost:
            lost.append(1)
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return answer

    ledger._rows = rows  # type: ignore[method-assign]
    return lost


@pytest.mark.parametrize("function", ["complete", "fail"])
def test_a_record_whose_answer_was_lost_is_answered_as_done(ledger: Ledger, function: str) -> None:
    claimed = ledger.claim("run-lost:s", {"a": 1}, tool_kind="idempotent_write")
    assert isinstance(claimed, Claimed)
    lost = lose_first_answer(ledger, function)
    if function == "complete":
        op = ledger.complete("run-lost:s", claimed.token, {"r": 1}, receipt={"id": "x"})
        assert op.state == "succeeded" and op.result_value() == {"r": 1}
    else:
        op = ledger.fail("run-lost:s", claimed.token, "validation", "bad")
        assert op.state == "failed_terminal" and op.error_class == "validation"
    assert lost == [1]


def test_a_different_complete_under_the_same_token_is_still_refused(ledger: Ledger) -> None:
    claimed = ledger.claim("run-diff:s", {"a": 1})
    assert isinstance(claimed, Claimed)
    ledger.complete("run-diff:s", claimed.token, {"r": 1})
    with pytest.raises(IdempoError) as refused:
        ledger.complete("run-diff:s", claimed.token, {"r": 2})
    assert refused.value.code == "stale_lease"


def test_async_calls_survive_a_server_restart(
    worker_url: str, ns: str, server_ctl: Callable[[str], None]
) -> None:
    async def main() -> None:
        async with await AsyncLedger.connect(worker_url, namespace=ns, min_size=3) as ledger:
            assert await ledger.now_ms() > 0
            await asyncio.to_thread(server_ctl, "restart")
            for n in range(5):
                assert await ledger.now_ms() > 0
                assert isinstance(await ledger.claim(f"run-ax:s{n}", {"n": n}), Claimed)

    asyncio.run(main())


# --- 3: the heartbeat through an outage shorter than the lease --------------------------------


@pytest.mark.parametrize("tool_kind", ["idempotent_write", "protected_write"])
def test_heartbeat_keeps_the_lease_through_a_short_outage(
    ledger: Ledger, server_ctl: Callable[[str], None], tool_kind: str
) -> None:
    effects: list[str] = []
    run_id = "run-hb-" + uuid.uuid4().hex[:6]

    def outage() -> None:
        time.sleep(1.5)
        server_ctl("stop")
        time.sleep(2.0)
        server_ctl("start")

    @ledger.step("slow", lease_ms=3000, tool_kind=tool_kind)
    def slow(run_id: str) -> str:
        effects.append(run_id)
        cut = threading.Thread(target=outage)
        cut.start()
        time.sleep(9)
        cut.join()
        return "done"

    assert slow(run_id) == "done"
    assert effects == [run_id]
    op = ledger.show(f"{run_id}:slow")
    assert op.state == "succeeded" and op.attempt == 1


def test_a_lost_lease_is_said_when_the_record_is_refused(ledger: Ledger) -> None:
    @ledger.step("taken", lease_ms=1200, tool_kind="idempotent_write")
    def taken(run_id: str) -> str:
        op = ledger.show("run-taken:taken")
        # The lease ends under the body (as a takeover would end it).
        ledger.fail("run-taken:taken", op.fencing_token, "transient", "gone")
        time.sleep(1.0)
        return "late"

    with pytest.raises(IdempoError) as refused:
        taken("run-taken")
    assert any("lease was lost" in note for note in getattr(refused.value, "__notes__", []))


# --- 5, 6: the consumer keeps its delivery and never dies on a handler's answer ---------------


def test_consumer_keeps_its_delivery_hidden_while_the_handler_runs(
    ledger: Ledger, queue: str
) -> None:
    seen: list[int] = []

    def handler(env: Envelope) -> Any:
        time.sleep(2.5)
        seen.append(len(ledger.read(queue, 30_000, 10)))
        return "ok"

    ledger.send(queue, envelope("run-vt:s"))
    assert Consumer(ledger, queue, handler, vt_ms=1500).process_one()
    assert seen == [0]  # nobody else could read it meanwhile
    assert ledger.show("run-vt:s").state == "succeeded"


def test_a_refused_final_ack_does_not_end_the_consumer(ledger: Ledger, queue: str) -> None:
    def read_again(point: str) -> None:
        if point == "before_ack":
            with ledger._pool.connection() as conn:
                conn.execute("SELECT FROM idempo.queue_set_vt(%s, %s, 0)", (queue, msg_id))
            assert ledger.read(queue, 30_000, 1)  # another consumer's delivery now

    msg_id = ledger.send(queue, envelope("run-ack:s"))
    consumer = Consumer(ledger, queue, lambda env: "ok", checkpoint=read_again)
    assert consumer.process_one()
    assert ledger.show("run-ack:s").state == "succeeded"


@pytest.mark.parametrize("answer", ["missing queue", "not json"])
def test_a_bad_handler_answer_is_recorded_not_raised(
    ledger: Ledger, queue: str, answer: str
) -> None:
    from idempo.consumer import Next

    def handler(env: Envelope) -> Any:
        if answer == "missing queue":
            following = Envelope.from_message(envelope("run-b:next"))
            assert following is not None
            return Next({"r": 1}, "no_such_queue_" + uuid.uuid4().hex[:6], following)
        return object()

    ledger.send(queue, envelope("run-b:s"))
    assert Consumer(ledger, queue, handler).process_one()
    op = ledger.show("run-b:s")
    assert (op.state, op.error_class) == ("unknown_outcome", "unknown_outcome")


def test_a_halted_run_gives_its_delivery_back_with_the_reason(
    ledger: Ledger, owner: Ledger, queue: str
) -> None:
    assert isinstance(ledger.claim("run-h:a", {}, run_id="run-h", tokens=5), Claimed)
    owner.run_action(
        "run-h", "rr-" + uuid.uuid4().hex[:8], "budget", "cap tokens", limits={"tokens": 6}
    )
    ledger.claim("run-h:b", {}, run_id="run-h", tokens=5)  # halts the run
    calls: list[str] = []
    ledger.send(queue, envelope("run-h:c"))
    consumer = Consumer(ledger, queue, lambda env: calls.append("ran"), vt_ms=200)
    for _ in range(4):
        consumer.process_one()
        time.sleep(0.3)
    assert calls == []
    dead = ledger.read(f"{queue}_dlq", 0, 10)
    assert len(dead) == 1 and "policy_denied" in str(dead[0].headers), dead


# --- 4: no password in a refusal, its context or its cause ------------------------------------


def _chain(error: BaseException | None) -> str:
    text = ""
    while error is not None:
        text += f"{type(error).__name__}: {error} {getattr(error, '__notes__', '')}\n"
        error = error.__cause__ or error.__context__
    return text


@pytest.mark.parametrize("password", ["50%off!Secret", "pl%41in-Secret", "a@b:c-Secret"])
def test_no_password_in_an_unparsable_address(owner_url: str, password: str) -> None:
    rest = owner_url.split("@", 1)[1]
    url = f"postgresql://w1:{password}@{rest}"
    with pytest.raises(IdempoError) as refused:
        Ledger(url, timeout=2).close()
    assert "Secret" not in _chain(refused.value)
    assert "Secret" not in repr(refused.value)

    async def main() -> None:
        await AsyncLedger.connect(url, timeout=2)

    with pytest.raises(IdempoError) as refused_async:
        asyncio.run(main())
    assert "Secret" not in _chain(refused_async.value)


def test_a_malformed_address_is_a_usage_error(owner_url: str) -> None:
    rest = owner_url.split("@", 1)[1]
    with pytest.raises(IdempoError) as refused:
        Ledger(f"postgresql://w1:50%off@{rest}", timeout=2)
    assert refused.value.code == "invalid_argument"
