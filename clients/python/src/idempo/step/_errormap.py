"""How a body's exception is recorded: its error class (ErrorMap's rules, then the defaults) and
the wait an HTTP Retry-After asks for."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Classified:
    """The error class an exception is recorded under, and the wait it asks for."""

    error_class: str
    retry_after_ms: int | None = None


def _http_status(error: BaseException) -> int | None:
    for holder in (error, getattr(error, "response", None)):
        for name in ("status_code", "status"):
            status = getattr(holder, name, None)
            if isinstance(status, int):
                return status
    return None


# The longest wait the ledger records (ten years, its ceiling of a retry delay).
MAX_RETRY_AFTER_MS = 315_360_000_000


def _header(headers: Any, name: str) -> Any:
    """A header's value, its name matched without regard to case (botocore's plain dicts are
    lowercase)."""
    if not isinstance(headers, Mapping):
        return None
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    for key, found in headers.items():
        if isinstance(key, str) and key.lower() == wanted:
            return found
    return None


def _retry_after_ms(error: BaseException) -> int | None:
    """The wait a Retry-After asks for, in ms, within 0 and the ledger's ceiling; None for what
    is no number of seconds (an HTTP date, garbage, NaN): the ledger's backoff applies."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or getattr(error, "headers", None)
    value = _header(headers, "Retry-After")
    if value is None:
        value = getattr(error, "retry_after", None)
    if value is None or isinstance(value, bool):
        return None
    try:
        seconds = float(value.strip() if isinstance(value, str | bytes) else value)
    except (TypeError, ValueError, OverflowError):
        return None
    if math.isnan(seconds):
        return None
    if seconds * 1000 >= MAX_RETRY_AFTER_MS:
        return MAX_RETRY_AFTER_MS
    return max(0, int(seconds * 1000))


class ErrorMap:
    """Classifies a body's exception: the rules added first, then the defaults (docs/python.md).

    Defaults: an HTTP 429 is ``rate_limited`` (with its Retry-After), other 5xx ``transient``, 401
    and 403 ``auth``, other 4xx ``validation``; timeouts and connection errors ``transient``;
    PermissionError ``auth``; ValueError, TypeError and KeyError ``validation``; anything else
    ``unknown_outcome`` on a protected write (reconciled, never run again blindly) and
    ``transient`` on a read or idempotent write.
    """

    def __init__(self, rules: Mapping[type[BaseException], str] | None = None) -> None:
        self._rules = dict(rules or {})

    def extend(self, rules: Mapping[type[BaseException], str]) -> ErrorMap:
        """A map that tries ``rules`` first (the most specific type wins), then these."""
        return ErrorMap({**rules, **self._rules})

    def classify(self, error: BaseException, tool_kind: str) -> Classified:
        for cls in type(error).__mro__:
            if cls in self._rules:
                error_class = self._rules[cls]
                retry = _retry_after_ms(error) if error_class == "rate_limited" else None
                return Classified(error_class, retry)
        status = _http_status(error)
        if status == 429:
            return Classified("rate_limited", _retry_after_ms(error))
        if status is not None and 500 <= status < 600:
            return Classified("transient")
        if status in (401, 403):
            return Classified("auth")
        if status is not None and 400 <= status < 500:
            return Classified("validation")
        if isinstance(error, TimeoutError | ConnectionError):
            return Classified("transient")
        if isinstance(error, PermissionError):
            return Classified("auth")
        if isinstance(error, ValueError | TypeError | KeyError):
            return Classified("validation")
        return Classified("unknown_outcome" if tool_kind == "protected_write" else "transient")


DEFAULT_ERRORS = ErrorMap()
