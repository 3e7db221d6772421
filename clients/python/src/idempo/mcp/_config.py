"""The guard's configuration (TOML or JSON): the ledger namespace, the lease, the upstream's
timeout and, per tool, its kind, key arguments, approval, timeout and error class."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from idempo._base import TOOL_KINDS

_DEFAULT_TIMEOUT_S = 60.0


class ConfigError(ValueError):
    """The guard's configuration cannot be used (the message says which entry)."""


@dataclass(frozen=True, slots=True)
class ToolConfig:
    """What the configuration says about one tool; ``None`` leaves it to the annotations."""

    kind: str | None = None
    key_args: tuple[str, ...] = ()
    requires_approval: bool = False
    timeout_s: float | None = None
    error_class: str = "validation"


@dataclass(frozen=True, slots=True)
class GuardConfig:
    """The guard's configuration: the ledger namespace, the lease and the tools."""

    namespace: str = "mcp"
    lease_ms: int = 30_000
    timeout_s: float = _DEFAULT_TIMEOUT_S
    tools: Mapping[str, ToolConfig] = field(default_factory=dict)


def _check_keys(where: str, entry: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")


def _positive(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{where} must be a positive number, not {value!r}")
    return float(value)


def _tool_config(name: str, entry: Any) -> ToolConfig:
    where = f"tools.{name}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table of settings")
    _check_keys(where, entry, {"kind", "key_args", "requires_approval", "timeout_s", "error_class"})
    kind = entry.get("kind")
    if kind is not None and kind not in TOOL_KINDS:
        raise ConfigError(f"{where}.kind must be one of {', '.join(TOOL_KINDS)}, not {kind!r}")
    key_args = entry.get("key_args", [])
    if not isinstance(key_args, list) or not all(isinstance(a, str) and a for a in key_args):
        raise ConfigError(f"{where}.key_args must be a list of argument names")
    approval = entry.get("requires_approval", False)
    if not isinstance(approval, bool):
        raise ConfigError(f"{where}.requires_approval must be true or false")
    if approval and kind == "read":
        raise ConfigError(f"{where}: a read is passed through and cannot require approval")
    timeout = entry.get("timeout_s")
    error_class = entry.get("error_class", "validation")
    if not isinstance(error_class, str) or not error_class:
        raise ConfigError(f"{where}.error_class must be one of the ledger's error classes")
    return ToolConfig(
        kind=kind,
        key_args=tuple(key_args),
        requires_approval=approval,
        timeout_s=None if timeout is None else _positive(f"{where}.timeout_s", timeout),
        error_class=error_class,
    )


def parse_config(data: Mapping[str, Any]) -> GuardConfig:
    """A configuration from its parsed TOML or JSON (docs/python.md has the format)."""
    _check_keys("the configuration", data, {"namespace", "lease_ms", "timeout_s", "tools"})
    namespace = data.get("namespace", "mcp")
    if not isinstance(namespace, str) or not namespace:
        raise ConfigError("namespace must be a non-empty string")
    lease_ms = data.get("lease_ms", 30_000)
    if isinstance(lease_ms, bool) or not isinstance(lease_ms, int) or lease_ms < 1000:
        raise ConfigError(f"lease_ms must be a whole number of at least 1000, not {lease_ms!r}")
    tools = data.get("tools", {})
    if not isinstance(tools, dict):
        raise ConfigError("tools must be a table of tool names")
    return GuardConfig(
        namespace=namespace,
        lease_ms=lease_ms,
        timeout_s=_positive("timeout_s", data.get("timeout_s", _DEFAULT_TIMEOUT_S)),
        tools={name: _tool_config(name, entry) for name, entry in tools.items()},
    )


def load_config(path: str | Path | None) -> GuardConfig:
    """Reads a configuration file (``.json`` as JSON, anything else as TOML); none: defaults."""
    if path is None:
        return GuardConfig()
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read the configuration {file}: {error.strerror}") from None
    try:
        data = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        kind = "JSON" if file.suffix == ".json" else "TOML"
        raise ConfigError(f"{file} is not valid {kind}: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file} must hold a table (an object) of settings")
    return parse_config(data)
