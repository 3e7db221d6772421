"""Powertools' own ``@idempotent`` and ``@idempotent_function`` over IdempoPersistenceLayer, on the
real ledger: the persistence contract, and where the ledger is stricter."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest
from aws_lambda_powertools.utilities.idempotency import (
    IdempotencyConfig,
    idempotent,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)

from idempo import InvalidArgument, Ledger, LedgerUnavailable, StaleLease
from idempo.powertools import IdempoPersistenceLayer

from .conftest import count_rows


class Context:
    """The part of a Lambda context Powertools reads: the time left, which bounds the lease."""

    function_name = "orders"
    memory_limit_in_mb = 128
    invoked_function_arn = "arn:aws:lambda:eu-west-1:000000000000:function:orders"
    aws_request_id = "req-1"

    def __init__(self, remaining_ms: int = 60_000) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def only_key(ledger: Ledger, ns: str) -> str:
    """The one operation key Powertools wrote in the namespace."""
    with ledger._pool.connection() as conn:
        rows = conn.execute(
            "SELECT operation_key FROM idempo.operations WHERE namespace = %s", (ns,)
        ).fetchall()
    assert len(rows) == 1, rows
    return str(rows[0][0])


def test_runs_once_replays_and_answers_the_old_record(ledger: Ledger, ns: str) -> None:
    layer = IdempoPersistenceLayer(ledger)
    runs: list[str] = []

    @idempotent(config=IdempotencyConfig(event_key_jmespath="order_id"), persistence_store=layer)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        runs.append(event["order_id"])
        return {"charged": event["amount"], "order": event["order_id"]}

    first = handler({"order_id": "o-1", "amount": 10}, Context())
    assert handler({"order_id": "o-1", "amount": 10, "retry": 1}, Context()) == first
    assert runs == ["o-1"]
    key = only_key(ledger, ns)
    assert key.startswith(layer.function_name + "#")
    op = ledger.show(key)
    assert (op.state, op.tool_kind, op.result_value()) == ("succeeded", "idempotent_write", first)

    # A put over the completed record: already exists, with the old record.
    with pytest.raises(IdempotencyItemAlreadyExistsError) as exists:
        layer.save_inprogress({"order_id": "o-1"}, remaining_time_in_millis=1000)
    old = exists.value.old_data_record
    assert old is not None
    assert old.status == "COMPLETED"
    assert old.response_json_as_dict() == first
    assert old.expiry_timestamp == op.retention_expires_at_ms // 1000
    record = layer.get_record({"order_id": "o-1"})
    assert record is not None
    assert record.response_json_as_dict() == first
    with pytest.raises(IdempotencyItemNotFoundError):
        layer.get_record({"order_id": "o-2"})


def test_idempotent_function(ledger: Ledger) -> None:
    layer = IdempoPersistenceLayer(ledger)
    runs = 0

    @idempotent_function(  # type: ignore[untyped-decorator]
        data_keyword_argument="order",
        config=IdempotencyConfig(event_key_jmespath="id"),
        persistence_store=layer,
    )
    def process(order: dict[str, Any]) -> dict[str, Any]:
        nonlocal runs
        runs += 1
        return {"id": order["id"], "status": "shipped"}

    assert process(order={"id": 7}) == process(order={"id": 7}) == {"id": 7, "status": "shipped"}
    assert process(order={"id": 8})["id"] == 8
    assert runs == 2


def test_payload_validation_on_every_path(ledger: Ledger) -> None:
    layer = IdempoPersistenceLayer(ledger)
    config = IdempotencyConfig(event_key_jmespath="order_id", payload_validation_jmespath="amount")
    release = threading.Event()
    started = threading.Event()
    runs = 0

    @idempotent(config=config, persistence_store=layer)
    def handler(event: dict[str, Any], context: Any) -> dict[str, int]:
        nonlocal runs
        runs += 1
        started.set()
        release.wait(10)
        return {"amount": event["amount"]}

    first = threading.Thread(target=handler, args=({"order_id": "o-1", "amount": 10}, Context()))
    first.start()
    assert started.wait(10)
    # While in progress: the ledger compares the fingerprint before it says in progress.
    with pytest.raises(IdempotencyValidationError):
        handler({"order_id": "o-1", "amount": 99}, Context())
    with pytest.raises(IdempotencyAlreadyInProgressError):
        handler({"order_id": "o-1", "amount": 10}, Context())
    release.set()
    first.join()
    # Completed: the same.
    with pytest.raises(IdempotencyValidationError):
        handler({"order_id": "o-1", "amount": 99}, Context())
    assert handler({"order_id": "o-1", "amount": 10}, Context()) == {"amount": 10}
    assert runs == 1


def test_handler_exception_deletes_the_record(ledger: Ledger, ns: str) -> None:
    layer = IdempoPersistenceLayer(ledger)
    attempts = 0

    @idempotent(config=IdempotencyConfig(event_key_jmespath="order_id"), persistence_store=layer)
    def handler(event: dict[str, Any], context: Any) -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise RuntimeError("provider down")
        return "ok"

    with pytest.raises(RuntimeError, match="provider down"):
        handler({"order_id": "o-1"}, Context())
    with pytest.raises(IdempotencyItemNotFoundError):
        layer.get_record({"order_id": "o-1"})
    op = ledger.show(only_key(ledger, ns))
    assert (op.state, op.error_class) == ("failed_retryable", "transient")
    assert "RuntimeError: provider down" in op.error_detail
    assert handler({"order_id": "o-1"}, Context()) == "ok"  # runs again at once
    assert attempts == 2
    assert ledger.show(op.key).attempt == 2


def run_in_thread(fn: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    """Starts ``fn(*args)``; the list gets its return value or its exception."""
    answer: list[Any] = []

    def target() -> None:
        try:
            answer.append(fn(*args))
        except Exception as error:
            answer.append(error)

    thread = threading.Thread(target=target)
    thread.start()
    return thread, answer


@pytest.mark.parametrize("late_raises", [False, True])
def test_late_execution_cannot_touch_the_takers_record(
    ledger: Ledger, ns: str, late_raises: bool
) -> None:
    """In-progress expiry as Powertools has it (the Lambda's remaining time), and the fencing the
    ledger adds: the late first execution neither overwrites nor deletes the taker's record."""
    layer = IdempoPersistenceLayer(ledger)
    release = threading.Event()
    started = threading.Event()

    @idempotent(config=IdempotencyConfig(event_key_jmespath="order_id"), persistence_store=layer)
    def handler(event: dict[str, Any], context: Any) -> str:
        if event["who"] == "late":
            started.set()
            release.wait(10)
            if late_raises:
                raise RuntimeError("late failure")
        return str(event["who"])

    late, answer = run_in_thread(handler, {"order_id": "o-1", "who": "late"}, Context(300))
    assert started.wait(10)
    with pytest.raises(IdempotencyAlreadyInProgressError):
        handler({"order_id": "o-1", "who": "taker"}, Context())
    time.sleep(0.4)  # the late execution's in-progress window lapses
    assert handler({"order_id": "o-1", "who": "taker"}, Context()) == "taker"
    release.set()
    late.join()
    assert isinstance(answer[0], IdempotencyPersistenceLayerError)
    assert isinstance(answer[0].__cause__, StaleLease)
    if late_raises:
        assert "the handler raised RuntimeError: late failure" in answer[0].__cause__.__notes__
    op = ledger.show(only_key(ledger, ns))
    assert (op.state, op.result_value()) == ("succeeded", "taker")
    assert handler({"order_id": "o-1", "who": "third"}, Context()) == "taker"


@pytest.mark.parametrize(
    ("tool_kind", "runs_again"), [("idempotent_write", True), ("protected_write", False)]
)
def test_lost_completion_after_the_effect(
    ledger: Ledger, ns: str, monkeypatch: pytest.MonkeyPatch, tool_kind: str, runs_again: bool
) -> None:
    """The effect happened but its completion was not saved; after the in-progress window a
    protected write goes to reconciliation instead of running the body again."""
    layer = IdempoPersistenceLayer(ledger, tool_kind=tool_kind)
    effects: list[str] = []

    @idempotent(config=IdempotencyConfig(event_key_jmespath="order_id"), persistence_store=layer)
    def handler(event: dict[str, Any], context: Any) -> str:
        effects.append(event["order_id"])
        return "sent"

    def lost(*args: Any, **kwargs: Any) -> None:
        raise LedgerUnavailable("connection lost")

    with monkeypatch.context() as patch:
        patch.setattr(ledger, "complete", lost)
        with pytest.raises(IdempotencyPersistenceLayerError):
            handler({"order_id": "o-1"}, Context(200))
    time.sleep(0.3)
    if runs_again:
        assert handler({"order_id": "o-1"}, Context()) == "sent"
        assert effects == ["o-1", "o-1"]
        return
    with pytest.raises(IdempotencyAlreadyInProgressError):
        handler({"order_id": "o-1"}, Context())
    assert effects == ["o-1"]
    op = ledger.show(only_key(ledger, ns))
    assert (op.state, op.tool_kind) == ("unknown_outcome", "protected_write")


def test_completed_record_expires(ledger: Ledger, owner_url: str, ns: str) -> None:
    """The record's expiry is the operation's retention; after it the key runs again. The hour
    (the ledger's shortest retention) is skipped by moving the recorded expiry back."""
    layer = IdempoPersistenceLayer(ledger)
    runs = 0

    @idempotent(config=IdempotencyConfig(event_key_jmespath="order_id"), persistence_store=layer)
    def handler(event: dict[str, Any], context: Any) -> int:
        nonlocal runs
        runs += 1
        return runs

    assert handler({"order_id": "o-1"}, Context()) == 1
    assert handler({"order_id": "o-1"}, Context()) == 1
    op = ledger.show(only_key(ledger, ns))
    assert op.retention_expires_at_ms - op.updated_at_ms == 3600 * 1000
    with psycopg.connect(owner_url, autocommit=True) as conn:
        # Stamped now, so that no trigger counts the update as a write that waited (schema 25).
        conn.execute(
            "UPDATE idempo.operations SET updated_at_ms = idempo.now_ms(),"
            " retention_expires_at_ms = idempo.now_ms() - 1"
            " WHERE namespace = %s AND operation_key = %s",
            (ns, op.key),
        )
    assert handler({"order_id": "o-1"}, Context()) == 2
    assert handler({"order_id": "o-1"}, Context()) == 2


def test_expiry_shorter_than_the_ledger_keeps_is_refused(ledger: Ledger, ns: str) -> None:
    layer = IdempoPersistenceLayer(ledger)
    config = IdempotencyConfig(event_key_jmespath="order_id", expires_after_seconds=60)

    @idempotent(config=config, persistence_store=layer)
    def handler(event: dict[str, Any], context: Any) -> str:
        return "ran"

    with pytest.raises(IdempotencyPersistenceLayerError) as refused:
        handler({"order_id": "o-1"}, Context())
    assert isinstance(refused.value.__cause__, InvalidArgument)
    assert ledger.show(only_key(ledger, ns)).state == "dispatching"


@pytest.mark.parametrize("use_local_cache", [False, True])
def test_local_cache(ledger: Ledger, worker_url: str, ns: str, use_local_cache: bool) -> None:
    layer = IdempoPersistenceLayer(ledger)
    config = IdempotencyConfig(
        event_key_jmespath="order_id",
        payload_validation_jmespath="amount",
        use_local_cache=use_local_cache,
    )
    runs = 0

    @idempotent(config=config, persistence_store=layer)
    def handler(event: dict[str, Any], context: Any) -> int:
        nonlocal runs
        runs += 1
        return int(event["amount"])

    assert handler({"order_id": "o-1", "amount": 5}, Context()) == 5
    assert handler({"order_id": "o-1", "amount": 5}, Context()) == 5
    with pytest.raises(IdempotencyValidationError):
        handler({"order_id": "o-1", "amount": 6}, Context())
    assert runs == 1
    # Without the cache, each repeat is a claim the ledger answers (a suppression); with it, the
    # repeats are answered from the cache and never reach the ledger.
    assert count_rows(worker_url, ns) == (1, 0 if use_local_cache else 2)


def test_tool_kind_checked(ledger: Ledger) -> None:
    with pytest.raises(InvalidArgument, match="tool_kind"):
        IdempoPersistenceLayer(ledger, tool_kind="write")
