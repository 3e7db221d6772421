"""Canonical JSON (RFC 8785) and payload fingerprints, byte for byte as the C++ engine makes them.

The engine (services/core/canonicaljson.cpp) refuses what a fingerprint must not accept: non-finite
numbers, duplicate member names, nesting deeper than 512 levels, and integers an IEEE-754 double
cannot hold exactly (two ids beyond 2^53 would otherwise share a fingerprint). Whole numbers a
double holds exactly are written as ECMAScript writes that double, so 2^60 is
``1152921504606847000`` here as there.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import rfc8785

from idempo.errors import InvalidArgument, InvalidJson

__all__ = [
    "Fingerprint",
    "JsonText",
    "canonical_json",
    "fingerprint",
    "parse_json",
    "project",
    "projection_set",
]

MAX_DEPTH = 512
# rfc8785 writes integers within ±(2^53 - 1) itself; beyond, the engine's double decides.
_SAFE_INT = 2**53 - 1
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


@dataclass(frozen=True, slots=True)
class JsonText:
    """JSON text parsed strictly, as the CLI parses ``--payload``, instead of a Python value."""

    text: str | bytes


def _refuse(message: str) -> InvalidJson:
    return InvalidJson(message)


def _exact(value: Any, depth: int) -> Any:
    """The value rfc8785 should write: checked, with whole numbers beyond 2^53 as doubles."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if -_SAFE_INT <= value <= _SAFE_INT:
            return value
        try:
            as_double = float(value)
        except OverflowError:
            raise _refuse(f"number {value} is not finite") from None
        if int(as_double) != value:
            raise _refuse(
                f"integer {value} is not exactly representable as a double (the nearest is "
                f"{int(as_double)}); send it as a string"
            )
        return as_double
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _refuse(f"number {value} is not finite")
        return value
    if isinstance(value, Mapping | Sequence) and not isinstance(value, bytes | bytearray):
        if depth >= MAX_DEPTH:
            raise _refuse(f"nesting deeper than {MAX_DEPTH} levels")
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for name, member in value.items():
                if not isinstance(name, str):
                    raise _refuse(f"member name {name!r} is not a string")
                out[name] = _exact(member, depth + 1)
            return out
        return [_exact(item, depth + 1) for item in value]
    raise _refuse(f"a {type(value).__name__} is not a JSON value")


def _too_deep() -> InvalidJson:
    return _refuse(f"nesting deeper than {MAX_DEPTH} levels")


def _text_depth(text: str) -> int:
    """How deep the arrays and objects of JSON text nest, counted without recursion (brackets
    inside strings left out); the parser reports anything else wrong."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise _too_deep()
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _value_depth(value: Any) -> int:
    """How deep a Python value's mappings and sequences nest, counted without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, Sequence) and not isinstance(item, str | bytes | bytearray):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise _too_deep()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


# Python frames the recursive parser, checker and writer take per level of nesting, at most.
_FRAMES_PER_LEVEL = 4


def _room_for(depth: int) -> None:
    """Raises the interpreter's recursion limit (never lowers it) so that ``depth`` levels, which
    the engine accepts up to 512, are parsed and written instead of refused as a RecursionError."""
    needed = depth * _FRAMES_PER_LEVEL + 1000
    if depth > 32 and sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name in out:
            raise _refuse(f"duplicate member name {json.dumps(name, ensure_ascii=False)}")
        out[name] = value
    return out


def _no_constant(name: str) -> Any:
    raise _refuse(f"invalid JSON: {name} is not a JSON number")


def parse_json(text: str | bytes) -> Any:
    """Parses JSON text as strictly as the engine: RFC 8259, UTF-8, I-JSON, finite numbers."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _refuse(f"invalid JSON at byte {error.start}: not UTF-8") from None
    _room_for(_text_depth(text))
    if "\0" in text:
        raise _refuse(
            f"invalid JSON at byte {len(text[: text.index(chr(0))].encode())}: unescaped NUL byte"
        )
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise _refuse(
            f"invalid JSON at byte {len(text[: error.pos].encode())}: {error.msg}"
        ) from None
    except RecursionError:
        raise _too_deep() from None
    _exact(value, 0)
    return value


def _as_value(value: Any) -> Any:
    return parse_json(value.text) if isinstance(value, JsonText) else value


def canonical_json(value: Any) -> str:
    """The RFC 8785 text of a JSON value (a Python value or :class:`JsonText`)."""
    value = _as_value(value)
    _room_for(_value_depth(value))
    try:
        return rfc8785.dumps(_exact(value, 0)).decode("utf-8")
    except rfc8785.CanonicalizationError as error:
        raise _refuse(str(error)) from None
    except RecursionError:
        raise _too_deep() from None


def _pointer_tokens(pointer: str) -> list[str]:
    """RFC 6901 reference tokens, refused as the engine refuses them (InvalidArgument)."""
    if pointer == "":
        return []
    malformed = InvalidArgument(
        f"malformed JSON pointer {json.dumps(pointer, ensure_ascii=False)}: it must be empty or "
        "start with '/', and '~' must be followed by 0 or 1"
    )
    if not pointer.startswith("/") or re.search(r"~(?![01])", pointer):
        raise malformed
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _select(value: Any, tokens: list[str]) -> tuple[bool, Any]:
    for token in tokens:
        if isinstance(value, Mapping):
            if token not in value:
                return False, None
            value = value[token]
        elif isinstance(value, Sequence) and not isinstance(value, str):
            if not _ARRAY_INDEX.fullmatch(token) or int(token) >= len(value):
                return False, None
            value = value[int(token)]
        else:
            return False, None
    return True, value


def projection_set(pointers: Iterable[str]) -> tuple[str, ...]:
    """The pointers as a set (sorted by UTF-8 bytes, each once): how the ledger compares them."""
    return tuple(sorted(set(pointers)))


def project(value: Any, pointers: Iterable[str]) -> Any:
    """The projection fingerprinted: each pointer mapped to what it selects; none selects all."""
    value = _as_value(value)
    chosen = projection_set(pointers)
    if not chosen:
        return value
    projection: dict[str, Any] = {}
    for pointer in chosen:
        found, selected = _select(value, _pointer_tokens(pointer))
        if found:
            projection[pointer] = selected
    return projection


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What a claim sends: the canonical payload, its SHA-256, the projection and its SHA-256."""

    payload: str
    payload_sha256: str
    fields: tuple[str, ...]
    fingerprint: str

    @property
    def fields_json(self) -> str:
        """The projection as the C++ store sends it (a JSON array, sorted, each once)."""
        return canonical_json(list(self.fields)) if self.fields else "[]"


def fingerprint(
    payload: Any, fields: Iterable[str] = (), *, must_select: bool = True
) -> Fingerprint:
    """Canonicalises and fingerprints a payload, over the projection ``fields`` when given.

    ``must_select=False`` is for a record's own projection, which the engine applies as it is.
    """
    if isinstance(fields, str | bytes):
        # A lone string would be read as its characters ("/a" as "/" and "a").
        raise InvalidArgument(
            f"fingerprint_fields must be a list of JSON pointers, not a single string {fields!r}"
        )
    value = _as_value(payload)
    text = canonical_json(value)
    chosen = projection_set(fields)
    if not chosen:
        digest = _sha256(text)
        return Fingerprint(text, digest, (), digest)
    projection = project(value, chosen)
    if must_select and not projection:
        # Fingerprinting nothing would make every payload match: a typo must not turn off
        # mismatch detection.
        raise InvalidArgument("none of the fingerprint fields selects anything in the payload")
    return Fingerprint(text, _sha256(text), chosen, _sha256(canonical_json(projection)))


def key_part(value: Any) -> str:
    """One part of an operation key joined by ``:``: a string as it is, anything else as its
    canonical JSON, with ``%`` and ``:`` escaped so that two different lists of parts never join
    into the same key (``("acme:eu", "7")`` and ``("acme", "eu:7")``)."""
    text = value if isinstance(value, str) else canonical_json(value)
    return text.replace("%", "%25").replace(":", "%3A")
