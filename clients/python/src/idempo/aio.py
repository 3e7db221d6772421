"""``AsyncLedger``: the asyncio client of the PostgreSQL ledger's SQL functions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from idempo._base import (
    LedgerBase,
    Rows,
    Statement,
    connection_lost,
    has_rows,
    same_completion,
    same_failure,
)
from idempo.canonical import fingerprint
from idempo.errors import (
    IdempoError,
    IllegalTransition,
    LedgerUnavailable,
    StaleLease,
    from_psycopg,
)
from idempo.outcomes import ClaimOutcome, Event, Message, Operation, RunStatus
from idempo.step import AsyncStep

T = TypeVar("T")

__all__ = ["AsyncLedger"]


class AsyncLedger(LedgerBase):
    """A pool of connections to one ledger, writing as one login into one namespace.

    ``conninfo`` is a libpq URI or key/value string (``service=NAME`` included); the password, if
    any, never appears in a message, a repr or a log line of this package. Identity is the login.
    """

    def __init__(
        self, conninfo: str = "", *, namespace: str = "default", owner: str | None = None
    ) -> None:
        super().__init__(conninfo, namespace, owner)
        self._conninfo = conninfo
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = None

    @classmethod
    async def connect(
        cls,
        conninfo: str = "",
        *,
        namespace: str = "default",
        owner: str | None = None,
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 30.0,
    ) -> AsyncLedger:
        """Connects (an asyncio pool); ``await ledger.close()`` or ``async with`` it."""
        ledger = cls(conninfo, namespace=namespace, owner=owner)
        # One direct connection first: a wrong password or host fails now, with libpq's reason,
        # instead of a pool timeout.
        refused: IdempoError | None = None
        try:
            first = await psycopg.AsyncConnection.connect(
                conninfo, connect_timeout=max(1, int(timeout))
            )
            await first.close()
        except psycopg.Error as error:
            refused = from_psycopg(error, ledger._secrets)
        if refused is not None:
            # Raised outside the handler: the driver's error is neither its context nor cause.
            raise refused
        ledger._pool = AsyncConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True},
            # A connection broken while it sat in the pool is replaced before it is handed out.
            check=AsyncConnectionPool.check_connection,
            open=False,
            name=f"idempo-{namespace}",
        )
        await ledger._pool.open()
        return ledger

    async def close(self) -> None:
        """Closes the pool's connections."""
        if self._pool is not None:
            await self._pool.close()

    async def __aenter__(self) -> AsyncLedger:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _rows(
        self,
        sql: str,
        params: Mapping[str, object] | tuple[object, ...],
        timeout: float | None = None,
    ) -> Rows:
        if self._pool is None:
            raise LedgerUnavailable("not connected: use AsyncLedger.connect()")
        async with (
            self._pool.connection(timeout) as conn,
            conn.cursor(row_factory=dict_row) as cur,
        ):
            await cur.execute(sql, params)
            return await cur.fetchall() if has_rows(cur.pgresult) else []

    async def _do(self, statement: Statement[T], timeout: float | None = None) -> T:
        """Sends ``statement``; once more on a fresh connection when the connection broke under
        it and the statement is safe to repeat."""
        again = statement.repeat
        while True:
            try:
                rows = await self._rows(statement.sql, statement.params, timeout)
            except psycopg.Error as error:
                if again and connection_lost(error):
                    again = False
                    continue
                raise from_psycopg(error, self._secrets) from None
            return statement.read(rows)

    async def _direct(self, statement: Statement[T], timeout: float) -> T:
        """Sends ``statement`` on a connection of its own, outside the pool (whose reconnection
        backs off for seconds after an outage): a heartbeat that must land before its lease
        lapses."""
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._conninfo, autocommit=True, connect_timeout=max(2, int(timeout))
            )
            async with conn, conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(statement.sql, statement.params)
                rows = await cur.fetchall() if has_rows(cur.pgresult) else []
        except psycopg.Error as error:
            raise from_psycopg(error, self._secrets) from None
        return statement.read(rows)

    async def claim(
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
            outcome, recorded = await self._do(self._claim(args, fp, fp.fields))
            if outcome is not None:
                return outcome
            fp = self._refingerprint(payload, recorded)
        raise self._projection_gave_up(key)

    async def complete(
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
            return await self._do(self._complete(key, token, result, receipt, retention_ms))
        except StaleLease:
            current = await self._do(self._show(key))
            if same_completion(current, token, result, receipt):
                return current
            raise

    async def fail(
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
            return await self._do(
                self._fail(key, token, error_class, detail, retry_after_ms, retention_ms)
            )
        except (StaleLease, IllegalTransition):
            current = await self._do(self._show(key))
            if same_failure(current, token, error_class):
                return current
            raise

    async def transition(
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
        return await self._do(
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

    async def heartbeat(self, key: str, token: int, *, lease_ms: int | None = None) -> Operation:
        """Extends the lease ``token`` holds."""
        return await self._do(self._heartbeat(key, token, lease_ms))

    async def transition_and_send(
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
        return await self._do(
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

    async def send(
        self, queue: str, message: Any, *, headers: Any = None, delay_ms: int | None = None
    ) -> int:
        """Sends a message; its id."""
        return await self._do(self._send(queue, message, headers, delay_ms))

    async def read(
        self,
        queue: str,
        vt_ms: int,
        quantity: int = 1,
        *,
        ack: Iterable[tuple[int, int]] | None = None,
    ) -> list[Message]:
        """The oldest visible messages, each hidden for ``vt_ms``; ``ack``s earlier deliveries
        (``(msg_id, read_ct)`` pairs) in the same transaction first."""
        return await self._do(self._read(queue, vt_ms, quantity, ack))

    async def ack(self, queue: str, msg_id: int, read_ct: int) -> str:
        """Acknowledges one delivery (deletes the message); ``done``."""
        return await self._do(self._ack(queue, msg_id, read_ct))

    async def nack(
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
        return await self._do(
            self._nack(queue, msg_id, read_ct, error_class, detail, retry_delay_ms)
        )

    async def set_vt(self, queue: str, msg_id: int, vt_ms: int) -> Message | None:
        """Hides a message for ``vt_ms`` more from now (of whatever delivery); the message."""
        return await self._do(self._set_vt(queue, msg_id, vt_ms))

    async def archive(self, queue: str, msg_id: int, read_ct: int | None = None) -> bool:
        """Moves a message (of that delivery, given ``read_ct``) to the queue's archive."""
        return await self._do(self._archive(queue, msg_id, read_ct))

    async def show(self, key: str) -> Operation:
        """The operation's record (NotFound when there is none)."""
        return await self._do(self._show(key))

    async def history(self, key: str) -> list[Event]:
        """The operation's history, oldest first."""
        return await self._do(self._history(key))

    async def run(self, run_id: str) -> RunStatus | None:
        """The run's budgets and what it used; None before its first budgeted claim."""
        return await self._do(self._run(run_id))

    async def run_action(
        self,
        run_id: str,
        request_id: str,
        action: str,
        reason: str,
        *,
        limits: Mapping[str, Any] | None = None,
    ) -> tuple[str, int]:
        """``resume`` a halted run or set its ``budget`` (operators): status and audit seq."""
        return await self._do(self._run_action(run_id, request_id, action, reason, limits))

    async def whoami(self) -> tuple[str, str]:
        """The login this ledger writes as, and its role."""
        return await self._do(self._whoami())

    async def now_ms(self) -> int:
        """The ledger's clock."""
        return await self._do(self._now_ms())

    def step(self, step_id: str, **options: Any) -> AsyncStep:
        """Step middleware for ``step_id`` on asyncio: a decorator of ``async def`` functions or an
        ``async with`` block; ``options`` are :class:`idempo.step.Step`'s (docs/python.md)."""
        return AsyncStep(self, step_id, **options)
