"""What the sync and asyncio ledgers share: arguments, statements and readers, never I/O."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import unquote

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq.abc import PGresult
from psycopg_pool import PoolTimeout

from idempo import _calls
from idempo.canonical import Fingerprint, fingerprint
from idempo.errors import InvalidArgument, LedgerUnavailable, NotFound
from idempo.outcomes import ClaimOutcome, Event, Message, Operation, RunStatus

T = TypeVar("T")
Rows = list[dict[str, Any]]

TOOL_KINDS = ("read", "idempotent_write", "protected_write")


def text_arg(name: str, value: object) -> str:
    """``value`` when it is a ``str``; otherwise InvalidArgument naming the argument (the ledger
    would answer a wrong type as a missing function, and bytes would be claimed as their hex)."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a str, not {type(value).__name__}")
    return value


def int_arg(name: str, value: object, *, optional: bool = False) -> int | None:
    """``value`` when it is an ``int`` (not a bool; None too when ``optional``); otherwise
    InvalidArgument naming the argument."""
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        wanted = "an int or None" if optional else "an int"
        raise InvalidArgument(f"{name} must be {wanted}, not {type(value).__name__}")
    return value


def bool_arg(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _texts(**values: object) -> None:
    for name, value in values.items():
        text_arg(name, value)


def _ints(optional: bool = False, **values: object) -> None:
    for name, value in values.items():
        int_arg(name, value, optional=optional)


@dataclass(frozen=True, slots=True)
class Statement(Generic[T]):
    """One round trip: the SQL, its parameters and how its rows are read."""

    sql: str
    params: Mapping[str, object] | tuple[object, ...]
    read: Callable[[Rows], T]
    # Whether sending it again after a connection lost mid-call is safe: a read, a claim (by its
    # key), a write the ledger answers alike when repeated (a delivery's ack, a lease's heartbeat)
    # or one whose repeat the client recognises (complete, fail).
    repeat: bool = False


def connection_lost(error: BaseException) -> bool:
    """Whether ``error`` says the connection broke (a server restart, a failover, a reset), so
    that a fresh connection may succeed; a pool timeout is not one (waiting again would double
    it)."""
    if isinstance(error, PoolTimeout) or not isinstance(error, psycopg.OperationalError):
        return False
    sqlstate = error.sqlstate
    return sqlstate is None or sqlstate.startswith("08") or sqlstate in ("57P01", "57P02", "57P03")


def same_completion(op: Operation, token: int, result: Any, receipt: Any) -> bool:
    """Whether ``op`` is the record a ``complete`` of ``token``, ``result`` and ``receipt``
    leaves: its repeat after a lost answer is refused as stale, and is done (engine.cpp
    ``Engine::complete``)."""
    return (
        op.state == "succeeded"
        and op.fencing_token == token
        and (op.result or "") == (_calls.json_arg(result) or "")
        and (op.receipt or "") == (_calls.json_arg(receipt) or "")
    )


def same_failure(op: Operation, token: int, error_class: str) -> bool:
    """Whether ``op`` is the record a ``fail`` of ``token`` and ``error_class`` leaves (its
    attempt no longer dispatching under that token, that class recorded): the repeat of a ``fail``
    whose answer was lost."""
    return (
        op.fencing_token == token
        and op.state not in ("dispatching", "succeeded")
        and op.error_class == error_class
    )


def has_rows(result: PGresult | None) -> bool:
    """Whether a statement answered rows (what ``cursor.description`` tells, without building
    a Column per column)."""
    return result is not None and result.status == pq.ExecStatus.TUPLES_OK


def _first(rows: Rows) -> dict[str, Any]:
    if not rows:
        raise LedgerUnavailable("the ledger answered no row")
    return rows[0]


def _scalar(rows: Rows) -> Any:
    return next(iter(_first(rows).values()))


def _operation(rows: Rows) -> Operation:
    return Operation.from_row(_first(rows))


def _messages(rows: Rows) -> list[Message]:
    return [Message.from_row(r) for r in rows]


def secrets_of(conninfo: str) -> tuple[str, ...]:
    """The password a connection string carries, to be kept out of every message."""
    found: list[str] = []
    # A URI's password as written and decoded, also when libpq cannot parse the URI (a '%' that
    # is no escape): its refusal quotes the password.
    userinfo = re.match(r"^[a-z]+://([^/?#]*)@", conninfo, re.IGNORECASE)
    if userinfo and ":" in userinfo.group(1):
        written = userinfo.group(1).split(":", 1)[1]
        found += [written, unquote(written)]
    try:
        password = conninfo_to_dict(conninfo).get("password")
    except Exception:
        # An unparsable string is refused by libpq later; keep it whole out of messages then.
        found.append(conninfo)
        password = None
    if password:
        found.append(str(password))
    return tuple(s for s in dict.fromkeys(found) if s)


def describe(conninfo: str) -> str:
    """Where a connection string points, without its password: ``user@host:port/dbname``."""
    try:
        parts = conninfo_to_dict(conninfo)
    except Exception:
        return "?"
    if "service" in parts:
        return f"service={parts['service']}"
    user = f"{parts['user']}@" if "user" in parts else ""
    port = f":{parts['port']}" if "port" in parts else ""
    return f"{user}{parts.get('host', '')}{port}/{parts.get('dbname', '')}"


class LedgerBase:
    """The statements of every ledger call, bound to one namespace and one lease owner."""

    def __init__(self, conninfo: str, namespace: str, owner: str | None) -> None:
        _texts(conninfo=conninfo, namespace=namespace)
        if owner is not None:
            text_arg("owner", owner)
        self.namespace = namespace
        self.owner = owner or _calls.default_owner()
        self._secrets = secrets_of(conninfo)
        self._where = describe(conninfo)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where!r}, namespace={self.namespace!r})"

    def _claim_args(
        self,
        key: str,
        *,
        tool_kind: str,
        run_id: str,
        step_id: str,
        target: str,
        lease_ms: int | None,
        max_attempts: int | None,
        requires_approval: bool,
        value: tuple[int, str] | None,
        cost: tuple[int, str] | None,
        tokens: int,
    ) -> _calls.ClaimArgs:
        _texts(key=key, tool_kind=tool_kind, run_id=run_id, step_id=step_id, target=target)
        _ints(True, lease_ms=lease_ms, max_attempts=max_attempts)
        int_arg("tokens", tokens)
        bool_arg("requires_approval", requires_approval)
        return _calls.ClaimArgs(
            self.namespace,
            key,
            self.owner,
            tool_kind,
            run_id,
            step_id,
            target,
            lease_ms,
            max_attempts,
            requires_approval,
            value,
            cost,
            tokens,
        )

    @staticmethod
    def _claim(
        args: _calls.ClaimArgs, fp: Fingerprint, requested: tuple[str, ...]
    ) -> Statement[tuple[ClaimOutcome | None, tuple[str, ...]]]:
        def read(rows: Rows) -> tuple[ClaimOutcome | None, tuple[str, ...]]:
            row = _first(rows)
            outcome = _calls.claim_outcome(row, requested)
            if outcome is not None:
                return outcome, ()
            # Asked again over the record's projection: only then are its fields needed.
            return None, Operation.from_row(row).fingerprint_fields

        sql, params = _calls.claim_call(args, fp)
        return Statement(sql, params, read, repeat=True)

    @staticmethod
    def _refingerprint(payload: Any, recorded: Iterable[str]) -> Fingerprint:
        # The record's projection decides for a caller that names none (engine.cpp claim).
        return fingerprint(payload, recorded, must_select=False)

    @staticmethod
    def _projection_gave_up(key: str) -> LedgerUnavailable:
        return LedgerUnavailable(
            f"claim of '{key}' kept meeting records of other projections; try again"
        )

    def _transition(
        self, function: str, args: Mapping[str, object], *, repeat: bool = False
    ) -> Statement[Operation]:
        sql, params = _calls.call(function, args)
        return Statement(sql, params, _operation, repeat=repeat)

    def _complete(
        self, key: str, token: int, result: Any, receipt: Any, retention_ms: int | None
    ) -> Statement[Operation]:
        text_arg("key", key)
        int_arg("token", token)
        int_arg("retention_ms", retention_ms, optional=True)
        return self._transition(
            "complete",
            {
                "p_namespace": self.namespace,
                "p_key": key,
                "p_fencing_token": token,
                "p_result": _calls.json_arg(result),
                "p_receipt": _calls.json_arg(receipt),
                "p_actor": self.owner,
                "p_retention_ms": retention_ms,
            },
            repeat=True,
        )

    def _fail(
        self,
        key: str,
        token: int,
        error_class: str,
        detail: str,
        retry_after_ms: int | None,
        retention_ms: int | None,
    ) -> Statement[Operation]:
        _texts(key=key, error_class=error_class, detail=detail)
        int_arg("token", token)
        _ints(True, retry_after_ms=retry_after_ms, retention_ms=retention_ms)
        return self._transition(
            "fail",
            {
                "p_namespace": self.namespace,
                "p_key": key,
                "p_fencing_token": token,
                "p_error_class": error_class,
                "p_error_detail": detail,
                "p_retry_after_ms": retry_after_ms,
                "p_actor": self.owner,
                "p_retention_ms": retention_ms,
            },
            repeat=True,
        )

    def _transition_from_dispatching(
        self,
        key: str,
        token: int,
        to: str,
        *,
        result: Any,
        receipt: Any,
        error_class: str | None,
        error_detail: str | None,
        retry_delay_ms: int | None,
        retention_ms: int | None,
        detail: str | None,
    ) -> Statement[Operation]:
        _texts(key=key, to=to)
        int_arg("token", token)
        _ints(True, retry_delay_ms=retry_delay_ms, retention_ms=retention_ms)
        return self._transition(
            "transition",
            _calls.transition_args(
                self.namespace,
                key,
                token,
                result=result,
                receipt=receipt,
                error_class=error_class,
                error_detail=error_detail,
                retry_delay_ms=retry_delay_ms,
                retention_ms=retention_ms,
                actor=self.owner,
                detail=detail,
                to=to,
            ),
        )

    def _heartbeat(self, key: str, token: int, lease_ms: int | None) -> Statement[Operation]:
        text_arg("key", key)
        int_arg("token", token)
        int_arg("lease_ms", lease_ms, optional=True)
        return self._transition(
            "heartbeat",
            {
                "p_namespace": self.namespace,
                "p_key": key,
                "p_fencing_token": token,
                "p_lease_ms": lease_ms,
                "p_actor": self.owner,
            },
            repeat=True,
        )

    def _transition_and_send(
        self,
        key: str,
        token: int,
        queue: str,
        message: Any,
        *,
        to: str,
        headers: Any,
        result: Any,
        receipt: Any,
        error_class: str | None,
        error_detail: str | None,
        retry_delay_ms: int | None,
        retention_ms: int | None,
    ) -> Statement[tuple[Operation, int]]:
        _texts(key=key, queue=queue, to=to)
        int_arg("token", token)
        args = _calls.transition_args(
            self.namespace,
            key,
            token,
            result=result,
            receipt=receipt,
            error_class=error_class,
            error_detail=error_detail,
            retry_delay_ms=retry_delay_ms,
            retention_ms=retention_ms,
            actor=self.owner,
            to=to,
        )
        args.update(
            p_queue=queue, p_message=_calls.json_arg(message), p_headers=_calls.json_arg(headers)
        )
        sql, params = _calls.call("transition_and_send", args, "(r.operation).*, r.msg_id")

        def read(rows: Rows) -> tuple[Operation, int]:
            row = _first(rows)
            return Operation.from_row(row), int(row["msg_id"])

        return Statement(sql, params, read)

    def _send(self, queue: str, message: Any, headers: Any, delay_ms: int | None) -> Statement[int]:
        text_arg("queue", queue)
        int_arg("delay_ms", delay_ms, optional=True)
        sql, params = _calls.call(
            "queue_send",
            {
                "p_queue": queue,
                "p_message": _calls.json_arg(message),
                "p_headers": _calls.json_arg(headers),
                "p_delay_ms": delay_ms,
            },
        )
        return Statement(sql, params, lambda rows: int(_scalar(rows)))

    def _read(
        self, queue: str, vt_ms: int, quantity: int, ack: Iterable[tuple[int, int]] | None
    ) -> Statement[list[Message]]:
        text_arg("queue", queue)
        _ints(vt_ms=vt_ms, quantity=quantity)
        sql, params = _calls.call(
            "queue_read",
            {
                "p_queue": queue,
                "p_vt_ms": vt_ms,
                "p_quantity": quantity,
                "p_ack": _calls.acks_arg(ack),
            },
        )
        return Statement(sql, params, _messages)

    def _ack(self, queue: str, msg_id: int, read_ct: int) -> Statement[str]:
        text_arg("queue", queue)
        _ints(msg_id=msg_id, read_ct=read_ct)
        sql, params = _calls.call(
            "queue_ack", {"p_queue": queue, "p_msg_id": msg_id, "p_read_ct": read_ct}
        )
        return Statement(sql, params, lambda rows: str(_scalar(rows)), repeat=True)

    def _nack(
        self,
        queue: str,
        msg_id: int,
        read_ct: int,
        error_class: str,
        detail: str,
        retry_delay_ms: int,
    ) -> Statement[Message | None]:
        _texts(queue=queue, error_class=error_class, detail=detail)
        _ints(msg_id=msg_id, read_ct=read_ct, retry_delay_ms=retry_delay_ms)
        sql, params = _calls.call(
            "queue_nack",
            {
                "p_queue": queue,
                "p_msg_id": msg_id,
                "p_read_ct": read_ct,
                "p_error_class": error_class,
                "p_error_detail": detail,
                "p_retry_delay_ms": retry_delay_ms,
            },
        )
        return Statement(
            sql,
            params,
            lambda rows: Message.from_row(rows[0]) if rows and rows[0]["msg_id"] else None,
            repeat=True,
        )

    def _archive(self, queue: str, msg_id: int, read_ct: int | None) -> Statement[bool]:
        text_arg("queue", queue)
        int_arg("msg_id", msg_id)
        int_arg("read_ct", read_ct, optional=True)
        sql, params = _calls.call(
            "queue_archive", {"p_queue": queue, "p_msg_id": msg_id, "p_read_ct": read_ct}
        )
        return Statement(sql, params, lambda rows: bool(_scalar(rows)), repeat=True)

    def _set_vt(self, queue: str, msg_id: int, vt_ms: int) -> Statement[Message | None]:
        text_arg("queue", queue)
        _ints(msg_id=msg_id, vt_ms=vt_ms)
        sql, params = _calls.call(
            "queue_set_vt", {"p_queue": queue, "p_msg_id": msg_id, "p_vt_offset_ms": vt_ms}
        )
        return Statement(
            sql,
            params,
            lambda rows: Message.from_row(rows[0]) if rows and rows[0]["msg_id"] else None,
            repeat=True,
        )

    def _show(self, key: str) -> Statement[Operation]:
        text_arg("key", key)

        def read(rows: Rows) -> Operation:
            if not rows:
                raise NotFound(f"no operation '{key}' in namespace '{self.namespace}'")
            return Operation.from_row(rows[0])

        return Statement(_calls.SHOW_SQL, (self.namespace, key), read, repeat=True)

    def _history(self, key: str) -> Statement[list[Event]]:
        text_arg("key", key)
        return Statement(
            _calls.HISTORY_SQL,
            (self.namespace, key),
            lambda rows: [_calls.event(r) for r in rows],
            repeat=True,
        )

    def _run(self, run_id: str) -> Statement[RunStatus | None]:
        text_arg("run_id", run_id)
        return Statement(
            _calls.RUN_SQL,
            (self.namespace, run_id),
            lambda rows: _calls.run_status(rows[0]) if rows else None,
            repeat=True,
        )

    def _run_action(
        self,
        run_id: str,
        request_id: str,
        action: str,
        reason: str,
        limits: Mapping[str, Any] | None,
    ) -> Statement[tuple[str, int]]:
        if action not in ("resume", "budget"):
            raise InvalidArgument(f"run action must be resume or budget, not {action!r}")
        sql, params = _calls.call(
            "run_action",
            {
                "p_namespace": self.namespace,
                "p_run_id": run_id,
                "p_request_id": request_id,
                "p_action": action,
                "p_reason": reason,
                "p_limits": _calls.json_arg(limits),
            },
        )
        sql = sql.replace("p_limits => %(p_limits)s::text", "p_limits => %(p_limits)s::jsonb")

        def read(rows: Rows) -> tuple[str, int]:
            values = list(_first(rows).values())
            return str(values[0]), int(values[1] or 0)

        return Statement(sql, params, read)

    def _whoami(self) -> Statement[tuple[str, str]]:
        return Statement(
            "SELECT login, role FROM idempo.whoami()",
            (),
            lambda rows: (str(_first(rows)["login"]), str(_first(rows)["role"])),
            repeat=True,
        )

    def _now_ms(self) -> Statement[int]:
        return Statement(
            "SELECT idempo.now_ms() AS now_ms", (), lambda rows: int(_scalar(rows)), repeat=True
        )
