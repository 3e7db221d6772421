"""Refusals named after the engine's error codes, mapped from SQLSTATEs as the C++ store maps them.

The map is services/store/postgres/pgconnection.cpp's ``codeForSqlState``: the ledger functions'
own class ``ID`` (ID001 to ID008), then the classes that waiting may cure.
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg

__all__ = [
    "IdempoError",
    "IllegalTransition",
    "Internal",
    "InvalidArgument",
    "InvalidJson",
    "InvalidKey",
    "LedgerBusy",
    "LedgerUnavailable",
    "NotFound",
    "PayloadTooLarge",
    "Refused",
    "SchemaMismatch",
    "StaleLease",
    "from_psycopg",
]


class IdempoError(Exception):
    """A refused request; nothing was written. ``code`` is the CLI's ``error`` field."""

    code = "internal"

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate


class InvalidKey(IdempoError):
    """The operation key or namespace breaks the key rules (ID001)."""

    code = "invalid_key"


class InvalidJson(IdempoError):
    """A payload, result, receipt, message or headers that are not acceptable JSON (ID002)."""

    code = "invalid_json"


class PayloadTooLarge(IdempoError):
    """More than 1 MiB of payload or message, more than 64 KiB of detail (ID003)."""

    code = "payload_too_large"


class InvalidArgument(IdempoError):
    """Any other bad argument (ID004, SQLSTATE class 22)."""

    code = "invalid_argument"


class NotFound(IdempoError):
    """No operation, queue or message under that name (ID005)."""

    code = "not_found"


class StaleLease(IdempoError):
    """A fencing token that is not current, a lease that is gone, a delivery read again (ID006)."""

    code = "stale_lease"


class IllegalTransition(IdempoError):
    """The transition table forbids the change, or the state moved (ID007)."""

    code = "illegal_transition"


class Refused(IdempoError):
    """A guarded action's rule said no: reason, four-eyes, a reused request id (ID008)."""

    code = "refused"


class LedgerUnavailable(IdempoError):
    """The ledger cannot be reached or written by this login now (connection, 42501, 28, 57)."""

    code = "ledger_unavailable"


class LedgerBusy(LedgerUnavailable):
    """The ledger could not take the request now (40001, deadlock, lock or statement timeout)."""

    code = "ledger_busy"


class SchemaMismatch(IdempoError):
    """The ledger's schema is missing or not the one these functions belong to."""

    code = "schema_mismatch"


class Internal(IdempoError):
    """A storage failure that is none of the above."""

    code = "internal"


_RULES: tuple[type[IdempoError], ...] = (
    InvalidKey,
    InvalidJson,
    PayloadTooLarge,
    InvalidArgument,
    NotFound,
    StaleLease,
    IllegalTransition,
    Refused,
)


def error_class_for(sqlstate: str | None) -> type[IdempoError]:
    """The exception class for a SQLSTATE, as the C++ store decides it."""
    if sqlstate is None or len(sqlstate) != 5:
        return Internal
    if sqlstate.startswith("ID"):
        number = sqlstate[2:]
        index = int(number) if number.isdigit() else 0
        return _RULES[index - 1] if 1 <= index <= len(_RULES) else Internal
    cls = sqlstate[:2]
    if cls == "40" or sqlstate in ("55P03", "57014", "53300"):
        return LedgerBusy
    if cls in ("08", "57", "53", "28") or sqlstate in ("42501", "25006"):
        return LedgerUnavailable
    if sqlstate in ("42P01", "42703", "42883", "3F000"):
        return SchemaMismatch
    if cls == "22":
        return InvalidArgument
    return Internal


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced, longest first (one may contain another)."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def from_psycopg(error: psycopg.Error, secrets: Iterable[str] = ()) -> IdempoError:
    """The refusal a psycopg error stands for, its message stripped of ``secrets``."""
    sqlstate = error.sqlstate
    message = error.diag.message_primary if sqlstate else None
    message = redact(message or str(error).strip() or type(error).__name__, secrets)
    if sqlstate is None:
        if isinstance(error, psycopg.DataError | psycopg.ProgrammingError):
            # Raised before anything is sent: text holding a NUL byte, a malformed address.
            return InvalidArgument(message)
        if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
            return LedgerUnavailable(message)
        return Internal(message)
    return error_class_for(sqlstate)(message, sqlstate=sqlstate)
