"""Every claim outcome and every error class through the client, sync and asyncio."""

from __future__ import annotations

import asyncio
import logging
import math
import multiprocessing
import time
from typing import Any

import pytest

import idempo
from idempo import (
    AsyncLedger,
    BudgetExhausted,
    Claimed,
    InProgress,
    JsonText,
    Ledger,
    PayloadMismatch,
    ProjectionMismatch,
    ReconcileRequired,
    Replayed,
    RetryLater,
)
from idempo.errors import error_class_for

from .conftest import WORKER_PASSWORD, count_rows, url_for


def claimed(outcome: idempo.ClaimOutcome) -> Claimed:
    assert isinstance(outcome, Claimed), outcome
    return outcome


def test_claimed_then_replayed_result(ledger: Ledger) -> None:
    first = claimed(ledger.claim("run-1:charge", {"amount": 1250, "currency": "EUR"}))
    assert first.lease_until > ledger.now_ms()
    done = ledger.complete("run-1:charge", first.token, {"charge": "ch_1"}, receipt={"id": 7})
    assert done.state == "succeeded"
    again = ledger.claim("run-1:charge", {"currency": "EUR", "amount": 1250})
    assert again == Replayed({"charge": "ch_1"}, None, {"id": 7}, again.operation)


def test_replayed_terminal_error(ledger: Ledger) -> None:
    first = claimed(ledger.claim("run-1:kyc", {"c": 1}))
    assert ledger.fail("run-1:kyc", first.token, "validation", "bad id").state == "failed_terminal"
    again = ledger.claim("run-1:kyc", {"c": 1})
    assert isinstance(again, Replayed)
    assert again.error == idempo.RecordedError("validation", "bad id")
    assert again.result is None


def test_in_progress_retry_later_and_reconcile(ledger: Ledger) -> None:
    first = claimed(ledger.claim("run-1:mail", {}))
    assert ledger.claim("run-1:mail", {}) == InProgress("dispatching", first.operation)
    ledger.fail("run-1:mail", first.token, "transient", "503")
    later = ledger.claim("run-1:mail", {})
    assert isinstance(later, RetryLater)
    assert later.at > ledger.now_ms() - 100

    pay = claimed(ledger.claim("run-1:pay", {"n": 1}))
    ledger.fail("run-1:pay", pay.token, "unknown_outcome", "timeout after send")
    assert isinstance(ledger.claim("run-1:pay", {"n": 1}), ReconcileRequired)


def test_lapsed_protected_write_is_reconciled_and_read_is_taken_over(ledger: Ledger) -> None:
    claimed(ledger.claim("run-2:pay", {}, lease_ms=1))
    claimed(ledger.claim("run-2:look", {}, lease_ms=1, tool_kind="read"))
    time.sleep(0.05)
    assert isinstance(ledger.claim("run-2:pay", {}), ReconcileRequired)
    assert isinstance(ledger.claim("run-2:look", {}, tool_kind="read"), Claimed)


def test_payload_and_projection_mismatch(ledger: Ledger) -> None:
    first = claimed(
        ledger.claim("run-3:a", {"order": "o-1", "at": 1}, fingerprint_fields=["/order"])
    )
    # A caller naming no fields is fingerprinted by the record's projection.
    assert isinstance(ledger.claim("run-3:a", {"order": "o-1", "at": 2}), InProgress)
    mismatch = ledger.claim("run-3:a", {"order": "o-2", "at": 1})
    assert mismatch == PayloadMismatch(first.operation.payload_fingerprint, mismatch.operation)
    other = ledger.claim("run-3:a", {"order": "o-1"}, fingerprint_fields=["/at", "/order"])
    assert isinstance(other, ProjectionMismatch)
    assert other.recorded_fields == ("/order",)
    assert other.requested_fields == ("/at", "/order")


def test_budget_exhausted(ledger: Ledger, owner: Ledger) -> None:
    claimed(ledger.claim("run-4:a", {}, run_id="run-4", tokens=5))
    status, _ = owner.run_action("run-4", "rr-1", "budget", "cap tokens", limits={"tokens": 6})
    assert status == "applied"
    halted = ledger.claim("run-4:b", {}, run_id="run-4", tokens=5)
    assert isinstance(halted, BudgetExhausted), halted
    assert (halted.budget, halted.used, halted.limit) == ("tokens", 5, 6)
    run = ledger.run("run-4")
    assert run is not None and run.state == "halted" and run.halt_budget == "tokens"


def test_heartbeat_show_history(ledger: Ledger) -> None:
    first = claimed(ledger.claim("run-5:a", {"x": [1, 2]}, run_id="run-5", step_id="a"))
    beat = ledger.heartbeat("run-5:a", first.token, lease_ms=60_000)
    assert beat.lease_expires_at_ms > first.lease_until
    shown = ledger.show("run-5:a")
    assert (shown.run_id, shown.step_id, shown.payload) == ("run-5", "a", '{"x":[1,2]}')
    assert [e.to_state for e in ledger.history("run-5:a")][-1] == "dispatching"
    assert all(e.login == "py_worker" for e in ledger.history("run-5:a"))
    with pytest.raises(idempo.NotFound):
        ledger.show("run-5:none")


def test_queue_outbox(ledger: Ledger, queue: str) -> None:
    first = claimed(ledger.claim("run-6:a", {}))
    op, msg_id = ledger.transition_and_send(
        "run-6:a", first.token, queue, {"step": "b"}, result={"ok": 1}
    )
    assert op.state == "succeeded" and op.result_value() == {"ok": 1}
    [message] = ledger.read(queue, 30_000)
    assert (message.msg_id, message.message) == (msg_id, {"step": "b"})
    ledger.send(queue, {"step": "c"}, headers={"trace": "t"})
    [second] = ledger.read(queue, 30_000, ack=[(message.msg_id, message.read_ct)])
    assert second.headers == {"trace": "t"}
    assert ledger.ack(queue, second.msg_id, second.read_ct) == "done"
    assert ledger.ack(queue, second.msg_id, second.read_ct) == "done"
    ledger.send(queue, {"step": "d"})
    [third] = ledger.read(queue, 0)
    again = ledger.nack(queue, third.msg_id, third.read_ct, "transient", "503")
    assert again is not None and again.msg_id == third.msg_id
    [fourth] = ledger.read(queue, 30_000)
    with pytest.raises(idempo.StaleLease):
        ledger.ack(queue, third.msg_id, third.read_ct)
    assert ledger.archive(queue, fourth.msg_id, fourth.read_ct)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda led: led.claim("", {}), idempo.InvalidKey),
        (lambda led: led.claim(" padded", {}), idempo.InvalidKey),
        (lambda led: led.claim("k\x01", {}), idempo.InvalidKey),
        (lambda led: led.claim("x" * 256, {}), idempo.InvalidKey),
        (lambda led: led.claim("k", JsonText("{nope")), idempo.InvalidJson),
        (lambda led: led.claim("k", JsonText('{"a":1,"a":2}')), idempo.InvalidJson),
        (lambda led: led.claim("k", {"n": math.nan}), idempo.InvalidJson),
        (lambda led: led.claim("k", {"n": 2**53 + 1}), idempo.InvalidJson),
        (lambda led: led.claim("k", {"blob": "x" * (1 << 20)}), idempo.PayloadTooLarge),
        (lambda led: led.claim("k", {}, lease_ms=0), idempo.InvalidArgument),
        (lambda led: led.claim("k", {}, tool_kind="write"), idempo.InvalidArgument),
        (lambda led: led.claim("k", {}, fingerprint_fields=["/none"]), idempo.InvalidArgument),
        (lambda led: led.claim("k", {}, fingerprint_fields=["bad"]), idempo.InvalidArgument),
        (lambda led: led.complete("k-unknown", 1), idempo.NotFound),
        (lambda led: led.run_action("r", "rr", "resume", "why"), idempo.LedgerUnavailable),
    ],
)
def test_refusals_write_nothing(
    ledger: Ledger, worker_url: str, ns: str, call: Any, error: type[idempo.IdempoError]
) -> None:
    with pytest.raises(error) as raised:
        call(ledger)
    assert type(raised.value) is error
    assert raised.value.code == error.code
    assert count_rows(worker_url, ns) == (0, 0)


def test_stale_lease_and_illegal_transition(ledger: Ledger, queue: str) -> None:
    first = claimed(ledger.claim("run-7:a", {}))
    with pytest.raises(idempo.StaleLease):
        ledger.complete("run-7:a", first.token + 1000)
    with pytest.raises(idempo.IllegalTransition):
        ledger.transition_and_send("run-7:a", first.token, queue, {}, to="awaiting_approval")
    assert ledger.show("run-7:a").state == "dispatching"


def test_refused_by_rule(owner: Ledger) -> None:
    with pytest.raises(idempo.Refused):
        owner.run_action("run-8", "rr-8", "resume", "")


def test_sqlstate_map_follows_the_cpp_store() -> None:
    expected = {
        "ID001": idempo.InvalidKey,
        "ID002": idempo.InvalidJson,
        "ID003": idempo.PayloadTooLarge,
        "ID004": idempo.InvalidArgument,
        "ID005": idempo.NotFound,
        "ID006": idempo.StaleLease,
        "ID007": idempo.IllegalTransition,
        "ID008": idempo.Refused,
        "ID009": idempo.Internal,
        "40001": idempo.LedgerBusy,
        "40P01": idempo.LedgerBusy,
        "55P03": idempo.LedgerBusy,
        "57014": idempo.LedgerBusy,
        "42501": idempo.LedgerUnavailable,
        "08006": idempo.LedgerUnavailable,
        "28P01": idempo.LedgerUnavailable,
        "57P01": idempo.LedgerUnavailable,
        "25006": idempo.LedgerUnavailable,
        "42P01": idempo.SchemaMismatch,
        "22003": idempo.InvalidArgument,
        "XX000": idempo.Internal,
    }
    for sqlstate, cls in expected.items():
        assert error_class_for(sqlstate) is cls, sqlstate
    assert issubclass(idempo.LedgerBusy, idempo.LedgerUnavailable)


def test_password_never_shown(
    worker_url: str, ledger_ready: str, ns: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "n0t-the-Pa55word"
    with pytest.raises(idempo.LedgerUnavailable) as raised:
        Ledger(url_for(ledger_ready, "py_worker", wrong), namespace=ns)
    shown = [str(raised.value), repr(raised.value), raised.value.message]
    with Ledger(worker_url, namespace=ns) as good:
        good.claim("run-9:a", {})
        shown += [repr(good), str(good)]
    shown += [r.getMessage() for r in caplog.records]
    for text in shown:
        assert wrong not in text and WORKER_PASSWORD not in text, text
    assert "py_worker@" in repr(good)


def test_identity_is_the_login(ledger: Ledger) -> None:
    assert ledger.whoami() == ("py_worker", "worker")


def _race(url: str, ns: str, start: Any, answers: Any) -> None:
    with Ledger(url, namespace=ns) as mine:
        start.wait()
        answers.put(type(mine.claim("run-r:only", {"n": 1})).__name__)


def test_sixteen_processes_one_claim(worker_url: str, ns: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(16)
    answers = ctx.Queue()
    procs = [ctx.Process(target=_race, args=(worker_url, ns, start, answers)) for _ in range(16)]
    for p in procs:
        p.start()
    got = sorted(answers.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert got.count("Claimed") == 1, got
    assert got.count("InProgress") == 15, got


def test_async_twin(worker_url: str, ns: str, queue: str) -> None:
    asyncio.run(_async_twin(worker_url, ns, queue))


async def _async_twin(worker_url: str, ns: str, queue: str) -> None:
    async with await AsyncLedger.connect(worker_url, namespace=ns) as aledger:
        first = claimed(await aledger.claim("run-a:x", {"k": 1}))
        assert isinstance(await aledger.claim("run-a:x", {"k": 1}), InProgress)
        await aledger.heartbeat("run-a:x", first.token)
        await aledger.complete("run-a:x", first.token, {"done": True})
        again = await aledger.claim("run-a:x", {"k": 1})
        assert isinstance(again, Replayed) and again.result == {"done": True}
        with pytest.raises(idempo.StaleLease):
            await aledger.fail("run-a:x", first.token, "transient")
        await aledger.send(queue, {"m": 1})
        [msg] = await aledger.read(queue, 30_000)
        assert await aledger.ack(queue, msg.msg_id, msg.read_ct) == "done"
        many = await asyncio.gather(*(aledger.claim("run-a:y", {}) for _ in range(8)))
        assert sum(isinstance(o, Claimed) for o in many) == 1
        assert (await aledger.show("run-a:x")).state == "succeeded"
        assert len(await aledger.history("run-a:x")) >= 2


def test_sync_and_async_have_one_shape() -> None:
    # Step middleware lives on Ledger, for sync and async functions alike.
    public = {n for n in dir(Ledger) if not n.startswith("_")} - {"step"}
    assert public <= {n for n in dir(AsyncLedger) if not n.startswith("_")}
