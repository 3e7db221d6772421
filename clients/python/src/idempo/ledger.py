"""``Ledger``: the synchronous client of the PostgreSQL ledger's SQL functions."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from idempo._base import (
    LedgerBase,
    Rows,
    Statement,
    connection_lost,
    has_rows,
    same_completion,
    same_failure,
)
from idempo._heartbeat import HeartbeatScheduler
from idempo.canonical import fingerprint
from idempo.errors import IdempoError, IllegalTransition, StaleLease, from_psycopg
from idempo.outcomes import ClaimOutcome, Event, Message, Operation, RunStatus
from idempo.step import Step

T = TypeVar("T")

__all__ = ["Ledger"]


class _Pool(ConnectionPool):
    """The pool, quiet when an unclosed ledger is collected: the collection may run on one of the
    pool's own threads, which cannot join itself (the others are stopped all the same)."""

    def __del__(self) -> None:
        with contextlib.suppress(RuntimeError):
            super().__del__()


class Ledger(LedgerBase):
    """A pool of connections to one ledger, writing as one login into one namespace.

    ``conninfo`` is a libpq URI or key/value string (``service=NAME`` included); the password, if
    any, never appears in a message, a repr or a log line of this package. Identity is the login.
    """

    def __init__(
        self,
        conninfo: str = "",
        *,
        namespace: str = "default",
        owner: str | None = None,
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(conninfo, namespace, owner)
        # The lease heartbeats of this ledger's running steps: one thread, started by the first.
        self._heartbeats = HeartbeatScheduler(f"idempo-heartbeat-{self.namespace}")
        # One direct connection first: a wrong password or host fails now, with libpq's reason,
        # instead of a pool timeout.
        refused: IdempoError | None = None
        try:
            psycopg.connect(conninfo, connect_timeout=max(1, int(timeout))).close()
        except psycopg.Error as error:
            refused = from_psycopg(error, self._secrets)
        if refused is not None:
            # Raised outside the handler: the driver's error, which may quote the connection
            # string, is neither its context nor its cause.
            self._heartbeats.close()
            raise refused
        self._pool = _Pool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True},
            # A connection broken while it sat in the pool (a server restart, a failover) is
            # replaced before it is handed out, instead of failing the call that takes it.
            check=_Pool.check_connection,
            open=False,
            name=f"idempo-{self.namespace}",
        )
        self._conninfo = conninfo
        self._pool.open()

    def close(self) -> None:
        """Stops the heartbeat thread, then closes the pool's connections."""
        self._heartbeats.close()
        self._pool.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _rows(
        self,
        sql: str,
        params: Mapping[str, object] | tuple[object, ...],
        timeout: float | None = None,
    ) -> Rows:
        with (
            self._pool.connection(timeout) as conn,
            conn.cursor(row_factory=dict_row) as cur,
        ):
            cur.execute(sql, params)
            return cur.fetchall() if has_rows(cur.pgresult) else []

    def _do(self, statement: Statement[T], timeout: float | None = None) -> T:
        """Sends ``statement``; once more on a fresh connection when the connection broke under
        it and the statement is safe to repeat."""
        again = statement.repeat
        while True:
            try:
                rows = self._rows(statement.sql, statement.params, timeout)
            except psycopg.Error as error:
                if again and connection_lost(error):
                    again = False
                    continue
                raise from_psycopg(error, self._secrets) from None
            return statement.read(rows)

    def _direct(self, statement: Statement[T], timeout: float) -> T:
        """Sends ``statement`` on a connection of its own, outside the pool (whose reconnection
        backs off for seconds after an outage): a heartbeat that must land before its lease
        lapses."""
        try:
            with (
                psycopg.connect(
                    self._conninfo, autocommit=True, connect_timeout=max(2, int(timeout))
                ) as conn,
                conn.cursor(row_factory=dict_row) as cur,
            ):
                cur.execute(statement.sql, statement.params)
                rows = cur.fetchall() if has_rows(cur.pgresult) else []
        except psycopg.Error as error:
            raise from_psycopg(error, self._secrets) from None
        return statement.read(rows)

    def claim(
        self,
        key: str,
        payload: Any,
        *,
        fingerprint_fields: Iterable[str] = (),
        tool_kind: str = "protected_write",
        run_id: str = "",
        step_id: str = "",
        target: str = "",
        lease_ms: int | None = None,
        max_attempts: int | None = None,
        requires_approval: bool = False,
        value: tuple[int, str] | None = None,
        cost: tuple[int, str] | None = None,
        tokens: int = 0,
    ) -> ClaimOutcome:
        """One atomic claim of ``key``; the ledger's answer as a typed outcome."""
        fp = fingerprint(payload, fingerprint_fields)
        args = self._claim_args(
            key,
            tool_kind=tool_kind,
            run_id=run_id,
            step_id=step_id,
            target=target,
            lease_ms=lease_ms,
            max_attempts=max_attempts,
            requires_approval=requires_approval,
            value=value,
            cost=cost,
            tokens=tokens,
        )
        for _ in range(4):
            outcome, recorded = self._do(self._claim(args, fp, fp.fields))
            if outcome is not None:
                return outcome
            fp = self._refingerprint(payload, recorded)
        raise self._projection_gave_up(key)

    def complete(
        self,
        key: str,
        token: int,
        result: Any = None,
        *,
        receipt: Any = None,
        retention_ms: int | None = None,
    ) -> Operation:
        """Records success under the lease ``token``: the result and receipt, as JSON. A repeat
        of a completion already applied (its answer lost) answers the record."""
        try:
            return self._do(self._complete(key, token, result, receipt, retention_ms))
        except StaleLease:
            current = self._do(self._show(key))
            if same_completion(current, token, result, receipt):
                return current
            raise

    def fail(
        self,
        key: str,
        token: int,
        error_class: str,
        detail: str = "",
        *,
        retry_after_ms: int | None = None,
        retention_ms: int | None = None,
    ) -> Operation:
        """Records a failed attempt; the ledger's retry policy places it. A repeat of a failure
        already recorded under ``token`` (its answer lost) answers the record."""
        try:
            return self._do(
                self._fail(key, token, error_class, detail, retry_after_ms, retention_ms)
            )
        except (StaleLease, IllegalTransition):
            current = self._do(self._show(key))
            if same_failure(current, token, error_class):
                return current
            raise

    def transition(
        self,
        key: str,
        token: int,
        to: str,
        *,
        result: Any = None,
        receipt: Any = None,
        error_class: str | None = None,
        error_detail: str | None = None,
        retry_delay_ms: int | None = None,
        retention_ms: int | None = None,
        detail: str | None = None,
    ) -> Operation:
        """Moves the operation from ``dispatching`` under the lease ``token`` to ``to``, as the
        ledger's transition table allows (``idempo.transition``); ``retry_delay_ms`` places a
        ``failed_retryable`` attempt itself instead of the default retry policy of ``fail``."""
        return self._do(
            self._transition_from_dispatching(
                key,
                token,
                to,
                result=result,
                receipt=receipt,
                error_class=error_class,
                error_detail=error_detail,
                retry_delay_ms=retry_delay_ms,
                retention_ms=retention_ms,
                detail=detail,
            )
        )

    def heartbeat(self, key: str, token: int, *, lease_ms: int | None = None) -> Operation:
        """Extends the lease ``token`` holds."""
        return self._do(self._heartbeat(key, token, lease_ms))

    def transition_and_send(
        self,
        key: str,
        token: int,
        queue: str,
        message: Any,
        *,
        to: str = "succeeded",
        headers: Any = None,
        result: Any = None,
        receipt: Any = None,
        error_class: str | None = None,
        error_detail: str | None = None,
        retry_delay_ms: int | None = None,
        retention_ms: int | None = None,
    ) -> tuple[Operation, int]:
        """The outbox: moves the operation from ``dispatching`` and sends ``message`` in one
        transaction; the record and the new message's id."""
        return self._do(
            self._transition_and_send(
                key,
                token,
                queue,
                message,
                to=to,
                headers=headers,
                result=result,
                receipt=receipt,
                error_class=error_class,
                error_detail=error_detail,
                retry_delay_ms=retry_delay_ms,
                retention_ms=retention_ms,
            )
        )

    def send(
        self, queue: str, message: Any, *, headers: Any = None, delay_ms: int | None = None
    ) -> int:
        """Sends a message; its id."""
        return self._do(self._send(queue, message, headers, delay_ms))

    def read(
        self,
        queue: str,
        vt_ms: int,
        quantity: int = 1,
        *,
        ack: Iterable[tuple[int, int]] | None = None,
    ) -> list[Message]:
        """The oldest visible messages, each hidden for ``vt_ms``; ``ack``s earlier deliveries
        (``(msg_id, read_ct)`` pairs) in the same transaction first."""
        return self._do(self._read(queue, vt_ms, quantity, ack))

    def ack(self, queue: str, msg_id: int, read_ct: int) -> str:
        """Acknowledges one delivery (deletes the message); ``done``."""
        return self._do(self._ack(queue, msg_id, read_ct))

    def nack(
        self,
        queue: str,
        msg_id: int,
        read_ct: int,
        error_class: str,
        detail: str = "",
        *,
        retry_delay_ms: int = 0,
    ) -> Message | None:
        """Gives a delivery back with its error, visible again after the delay."""
        return self._do(self._nack(queue, msg_id, read_ct, error_class, detail, retry_delay_ms))

    def set_vt(self, queue: str, msg_id: int, vt_ms: int) -> Message | None:
        """Hides a message for ``vt_ms`` more from now (of whatever delivery); the message."""
        return self._do(self._set_vt(queue, msg_id, vt_ms))

    def archive(self, queue: str, msg_id: int, read_ct: int | None = None) -> bool:
        """Moves a message (of that delivery, given ``read_ct``) to the queue's archive."""
        return self._do(self._archive(queue, msg_id, read_ct))

    def show(self, key: str) -> Operation:
        """The operation's record (NotFound when there is none)."""
        return self._do(self._show(key))

    def history(self, key: str) -> list[Event]:
        """The operation's history, oldest first."""
        return self._do(self._history(key))

    def run(self, run_id: str) -> RunStatus | None:
        """The run's budgets and what it used; None before its first budgeted claim."""
        return self._do(self._run(run_id))

    def run_action(
        self,
        run_id: str,
        request_id: str,
        action: str,
        reason: str,
        *,
        limits: Mapping[str, Any] | None = None,
    ) -> tuple[str, int]:
        """``resume`` a halted run or set its ``budget`` (operators): status and audit seq."""
        return self._do(self._run_action(run_id, request_id, action, reason, limits))

    def whoami(self) -> tuple[str, str]:
        """The login this ledger writes as, and its role."""
        return self._do(self._whoami())

    def now_ms(self) -> int:
        """The ledger's clock."""
        return self._do(self._now_ms())

    def step(self, step_id: str, **options: Any) -> Step:
        """Step middleware for ``step_id``: a decorator (sync or async functions) or a context
        manager; ``options`` are :class:`idempo.step.Step`'s (docs/python.md)."""
        return Step(self, step_id, **options)
