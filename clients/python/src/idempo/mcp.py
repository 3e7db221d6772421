"""A guard in front of any MCP server: each consequential tool call goes through the ledger.

``python -m idempo.mcp --upstream "CMD ARGS" --ledger URL [--config FILE]`` (or the console
script ``idempo-mcp-guard``) is an MCP server on stdio that starts one upstream MCP server
(``CMD ARGS`` on stdio, or a Streamable HTTP URL) and re-exposes its tools. A tool's kind comes
from the configuration, else from its MCP annotations (``readOnlyHint``: ``read``;
``idempotentHint``: ``idempotent_write``; otherwise ``protected_write``). A ``read`` is passed
straight through. Any other call is claimed in the ledger under the key
``RUN:STEP:TOOL[:KEY ARGUMENTS]``, the run and step taken from the request's ``_meta``
(``idempo/run_id``, ``idempo/step_id``) and the arguments as the payload: only ``Claimed`` reaches
the upstream; a duplicate is answered with the recorded ``CallToolResult``; another payload under
the same key, a call in flight, an approval, an unknown outcome are error results saying so
(``_meta["idempo/status"]`` names which). The ledger decides every answer (docs/python.md).

Import this module only with the MCP SDK installed (``pip install 'idempo[mcp]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tomllib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import anyio
    from anyio.abc import TaskGroup, TaskStatus
    from mcp import types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError
    from mcp.types.jsonrpc import CONNECTION_CLOSED, INVALID_PARAMS, REQUEST_TIMEOUT
except ImportError as missing:  # pragma: no cover - depends on the environment
    raise ImportError("idempo.mcp needs the MCP SDK: pip install 'idempo[mcp]'") from missing

from idempo._base import TOOL_KINDS
from idempo.aio import AsyncLedger
from idempo.canonical import key_part
from idempo.errors import IdempoError, SchemaMismatch, StaleLease
from idempo.outcomes import (
    BudgetExhausted,
    Claimed,
    ClaimOutcome,
    InProgress,
    Operation,
    PayloadMismatch,
    ProjectionMismatch,
    ReconcileRequired,
    Replayed,
    RetryLater,
)

__all__ = [
    "RUN_ID_META",
    "STATUS_META",
    "STEP_ID_META",
    "ConfigError",
    "Guard",
    "GuardConfig",
    "ToolConfig",
    "UpstreamError",
    "load_config",
    "main",
]

RUN_ID_META = "idempo/run_id"
"""The request ``_meta`` field naming the agent's run (required on every guarded call)."""
STEP_ID_META = "idempo/step_id"
"""The request ``_meta`` field naming the step of the run (required on every guarded call)."""
STATUS_META = "idempo/status"
"""The result ``_meta`` field saying what the guard did: ``executed``, ``replayed``,
``conflict``, ``in_progress``, ``awaiting_approval``, ``retry_later``, ``unknown_outcome``,
``failed``, ``budget_exhausted`` or ``refused``."""
KEY_META = "idempo/key"
STATE_META = "idempo/state"

_DEFAULT_TIMEOUT_S = 60.0


class ConfigError(ValueError):
    """The guard's configuration cannot be used (the message says which entry)."""


class UpstreamError(RuntimeError):
    """The upstream MCP server could not be started or reached."""


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


def kind_of(tool: types.Tool, configured: ToolConfig | None) -> str:
    """The configured kind, else the one the tool's MCP annotations give."""
    if configured is not None and configured.kind is not None:
        return configured.kind
    hints = tool.annotations
    if hints is not None and hints.read_only_hint:
        return "read"
    if hints is not None and hints.idempotent_hint:
        return "idempotent_write"
    return "protected_write"


def _error(text: str, status: str, **meta: Any) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        is_error=True,
        _meta={STATUS_META: status, **meta},
    )


def _text_of(result: types.CallToolResult) -> str:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return "\n".join(texts) or "the tool answered an error"


def _with_meta(result: types.CallToolResult, **meta: Any) -> types.CallToolResult:
    return result.model_copy(update={"meta": {**(result.meta or {}), **meta}})


class Upstream:
    """One upstream MCP server, connected by a task of the guard's task group and connected
    again (a new process) when the connection is lost."""

    def __init__(self, target: str, env: Mapping[str, str] | None = None) -> None:
        self.target = target
        self._env = dict(env) if env is not None else None
        self._live: tuple[ClientSession, anyio.Event] | None = None
        self._lock = anyio.Lock()
        self._group: TaskGroup | None = None

    def _transport(self) -> Any:
        if self.target.startswith(("http://", "https://")):
            return streamable_http_client(self.target)
        argv = shlex.split(self.target)
        if not argv:
            raise UpstreamError("the upstream command is empty")
        return stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=self._env))

    async def _hold(self, *, task_status: TaskStatus[BaseException | None]) -> None:
        live: tuple[ClientSession, anyio.Event] | None = None
        try:
            async with self._transport() as streams, ClientSession(*streams) as session:
                await session.initialize()
                live = self._live = (session, anyio.Event())
                task_status.started(None)
                await live[1].wait()
        except Exception as error:
            if live is None:
                task_status.started(error)
        finally:
            if live is not None and self._live is live:
                self._live = None

    async def connect(self, group: TaskGroup) -> tuple[ClientSession, anyio.Event]:
        """The live session, started anew when there is none."""
        hint = " (did the command start an MCP server on stdio?)"
        self._group = group
        async with self._lock:
            if self._live is None or self._live[1].is_set():
                failure = await group.start(self._hold)
                if failure is not None or self._live is None:
                    raise UpstreamError(
                        f"the upstream MCP server {self.target!r} did not start: "
                        f"{_describe(failure)}" + (hint if isinstance(failure, MCPError) else "")
                    )
            return self._live

    def close(self) -> None:
        """Closes the connection (its process too)."""
        if self._live is not None:
            self._live[1].set()

    async def list_tools(self, group: TaskGroup) -> list[types.Tool]:
        session, _ = await self.connect(group)
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            page = await session.list_tools(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
            )
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call(
        self, name: str, arguments: dict[str, Any] | None, timeout_s: float
    ) -> types.CallToolResult:
        """Calls the tool; a lost connection is closed, and the next call starts a new one."""
        assert self._group is not None
        session, lost = await self.connect(self._group)
        try:
            return await session.call_tool(name, arguments, read_timeout_seconds=timeout_s)
        except MCPError as error:
            if error.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                lost.set()
            raise
        except Exception:
            lost.set()
            raise


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "no session"
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in error.exceptions)
    if isinstance(error, MCPError):
        return error.message
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename or ''}".rstrip(": ")
    return str(error) or type(error).__name__


class Guard:
    """The guard's tools and its answer to each call, over one ledger and one upstream."""

    def __init__(self, ledger: AsyncLedger, upstream: Upstream, config: GuardConfig) -> None:
        self.ledger = ledger
        self.upstream = upstream
        self.config = config
        self.tools: dict[str, types.Tool] = {}
        self.kinds: dict[str, str] = {}

    async def start(self, group: TaskGroup) -> None:
        """Connects the upstream and learns its tools; a configured tool it lacks is an error."""
        tools = await self.upstream.list_tools(group)
        self.tools = {tool.name: tool for tool in tools}
        missing = sorted(set(self.config.tools) - set(self.tools))
        if missing:
            raise ConfigError(
                f"the configuration names tool(s) the upstream lacks: {', '.join(missing)} "
                f"(it has {', '.join(sorted(self.tools)) or 'none'})"
            )
        for name, tool in self.tools.items():
            configured = self.config.tools.get(name)
            self.kinds[name] = kind_of(tool, configured)
            for arg in configured.key_args if configured else ():
                if arg not in tool.input_schema.get("properties", {}):
                    raise ConfigError(f"tools.{name}.key_args: {name} has no argument {arg!r}")

    def server(self) -> Server[Any]:
        """The MCP server (low-level) that re-exposes the upstream's tools."""

        async def list_tools(
            ctx: Any, params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=list(self.tools.values()))

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            return await self.call(params.name, params.arguments, dict(params.meta or {}))

        return Server("idempo-mcp-guard", on_list_tools=list_tools, on_call_tool=call_tool)

    def _timeout(self, name: str) -> float:
        configured = self.config.tools.get(name)
        return (
            configured.timeout_s if configured and configured.timeout_s else self.config.timeout_s
        )

    async def call(
        self, name: str, arguments: dict[str, Any] | None, meta: Mapping[str, Any]
    ) -> types.CallToolResult:
        """One tools/call: passed through for a read, through the ledger otherwise."""
        if name not in self.tools:
            raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}")
        kind = self.kinds[name]
        if kind == "read":
            try:
                return await self.upstream.call(name, arguments, self._timeout(name))
            except Exception as error:
                return _error(f"{name}: the upstream failed: {_describe(error)}", "failed")
        run_id, step_id = meta.get(RUN_ID_META), meta.get(STEP_ID_META)
        absent = [f for f, v in ((RUN_ID_META, run_id), (STEP_ID_META, step_id)) if not v]
        if absent or not isinstance(run_id, str) or not isinstance(step_id, str):
            return _error(
                f"{name} is a {kind}: its call must carry the request _meta fields "
                f"{RUN_ID_META!r} and {STEP_ID_META!r} (strings; missing: "
                f"{', '.join(absent) or 'none, but not strings'}); nothing was run",
                "refused",
            )
        configured = self.config.tools.get(name) or ToolConfig()
        args = arguments or {}
        lacking = [a for a in configured.key_args if a not in args]
        if lacking:
            return _error(
                f"{name}: the key argument(s) {', '.join(lacking)} are missing; nothing was run",
                "refused",
            )
        target = ":".join(key_part(args[a]) for a in configured.key_args)
        key = ":".join(key_part(part) for part in (run_id, step_id, name)) + (
            f":{target}" if target else ""
        )
        try:
            outcome = await self.ledger.claim(
                key,
                args,
                tool_kind=kind,
                run_id=run_id,
                step_id=step_id,
                target=target,
                lease_ms=self.config.lease_ms,
                requires_approval=configured.requires_approval,
            )
            if isinstance(outcome, Claimed):
                return await self._run(name, args, key, outcome, configured)
            return _answer(name, key, outcome)
        except IdempoError as error:
            return _error(f"{name}: the ledger refused {key!r}: {error}", "refused", **_k(key))

    async def _run(
        self,
        name: str,
        args: dict[str, Any],
        key: str,
        claimed: Claimed,
        configured: ToolConfig,
    ) -> types.CallToolResult:
        result: types.CallToolResult | None = None
        failure: BaseException | None = None
        async with anyio.create_task_group() as beats:
            beats.start_soon(self._heartbeat, key, claimed.token)
            try:
                result = await self.upstream.call(name, args, self._timeout(name))
            except Exception as error:
                failure = error
            beats.cancel_scope.cancel()
        token = claimed.token
        if result is not None and not result.is_error:
            try:
                dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                await self.ledger.complete(key, token, dumped)
            except IdempoError as error:
                # The effect happened: its answer goes to the caller; the ledger's lease decides.
                print(f"idempo-mcp-guard: {key}: result not recorded: {error}", file=sys.stderr)
                return _with_meta(result, **{STATUS_META: "unrecorded"}, **_k(key))
            return _with_meta(result, **{STATUS_META: "executed"}, **_k(key))
        if result is not None:
            operation = await self.ledger.fail(key, token, configured.error_class, _text_of(result))
            return _with_meta(
                result, **{STATUS_META: "failed", STATE_META: operation.state}, **_k(key)
            )
        if isinstance(failure, MCPError) and failure.code not in (
            CONNECTION_CLOSED,
            REQUEST_TIMEOUT,
        ):
            # The upstream refused the request itself: nothing was run.
            operation = await self.ledger.fail(key, token, "validation", failure.message)
        else:
            operation = await self.ledger.fail(key, token, "unknown_outcome", _describe(failure))
        return _failed(name, key, operation, f"the upstream failed: {_describe(failure)}")

    async def _heartbeat(self, key: str, token: int) -> None:
        every = self.config.lease_ms / 3000
        while True:
            await anyio.sleep(every)
            try:
                await self.ledger.heartbeat(key, token, lease_ms=self.config.lease_ms)
            except StaleLease:
                return
            except IdempoError as error:
                print(f"idempo-mcp-guard: {key}: heartbeat: {error}", file=sys.stderr)


def _k(key: str) -> dict[str, str]:
    return {KEY_META: key}


def _failed(name: str, key: str, operation: Operation, why: str) -> types.CallToolResult:
    state = operation.state
    if state in ("unknown_outcome", "reconciling", "confirmation_required"):
        text = (
            f"{name}: outcome unknown ({why}); the ledger holds {key!r} in {state} for "
            "reconciliation, and the same call will not run it again"
        )
        return _error(text, "unknown_outcome", **{STATE_META: state}, **_k(key))
    return _error(
        f"{name}: {why} (ledger state {state})", "failed", **{STATE_META: state}, **_k(key)
    )


def _answer(name: str, key: str, outcome: ClaimOutcome) -> types.CallToolResult:
    """Every claim outcome but Claimed, as the caller sees it."""
    meta = {STATE_META: outcome.operation.state, **_k(key)}
    if isinstance(outcome, Replayed):
        if outcome.error is None:
            try:
                recorded = types.CallToolResult.model_validate(outcome.result)
            except ValueError:  # pydantic's ValidationError: a record not made by a guard
                return _error(
                    f"{name}: {key!r} succeeded, but its recorded result is not a tool result",
                    "failed",
                    **meta,
                )
            return _with_meta(recorded, **{STATUS_META: "replayed"}, **meta)
        error = outcome.error
        return _error(
            f"{name} failed earlier ({error.error_class}): {error.detail}", "failed", **meta
        )
    if isinstance(outcome, PayloadMismatch | ProjectionMismatch):
        return _error(
            f"{name}: conflict: {key!r} was used for other arguments; nothing was run "
            "(a new action needs a new step id)",
            "conflict",
            **meta,
        )
    if isinstance(outcome, InProgress):
        if outcome.state == "awaiting_approval":
            return _error(
                f"{name}: awaiting approval: {key!r} runs once an approver decides in the ledger",
                "awaiting_approval",
                **meta,
            )
        return _error(
            f"{name}: in progress: {key!r} is being run by another call ({outcome.state}); "
            "call again later for its result",
            "in_progress",
            **meta,
        )
    if isinstance(outcome, RetryLater):
        return _error(
            f"{name}: the last attempt failed; the ledger allows the next at {outcome.at} ms",
            "retry_later",
            **meta,
            **{"idempo/retry_at_ms": outcome.at},
        )
    if isinstance(outcome, ReconcileRequired):
        return _failed(name, key, outcome.operation, "an earlier attempt's outcome is unknown")
    assert isinstance(outcome, BudgetExhausted)
    return _error(
        f"{name}: the run is halted by its {outcome.budget} budget: {outcome.detail}",
        "budget_exhausted",
        **meta,
    )


def _upstream_env() -> dict[str, str]:
    # The upstream gets the guard's environment but the ledger's credentials.
    hidden = {"PGPASSWORD", "IDEMPO_LEDGER"}
    return {name: value for name, value in os.environ.items() if name not in hidden}


@asynccontextmanager
async def running(upstream: str, ledger_url: str, config: GuardConfig) -> AsyncIterator[Guard]:
    """A started guard: the ledger connected, the upstream running and its tools checked."""
    ledger = await AsyncLedger.connect(ledger_url, namespace=config.namespace)
    try:
        # A ledger without the schema (no `idempo init`) refuses here, before any call is served.
        try:
            await ledger.whoami()
        except SchemaMismatch as missing:
            raise SchemaMismatch(
                f"{missing.message}: the ledger has no idempo schema; run `idempo init` on it"
            ) from None
        async with anyio.create_task_group() as group:
            guard = Guard(ledger, Upstream(upstream, _upstream_env()), config)
            try:
                await guard.start(group)
                yield guard
            finally:
                guard.upstream.close()
    finally:
        await ledger.close()


async def serve(upstream: str, ledger_url: str, config: GuardConfig) -> None:
    """Runs the guard on stdio until its client goes."""
    async with running(upstream, ledger_url, config) as guard:
        server = guard.server()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    """``idempo-mcp-guard --upstream CMD --ledger URL [--config FILE]``."""
    parser = argparse.ArgumentParser(
        prog="idempo-mcp-guard",
        description="An MCP server that puts the Idempo ledger in front of another MCP server.",
    )
    parser.add_argument(
        "--upstream", required=True, help='the upstream MCP server: "CMD ARGS" (stdio) or a URL'
    )
    parser.add_argument(
        "--ledger",
        default=os.environ.get("IDEMPO_LEDGER", ""),
        help="the ledger: a libpq URI or service=NAME (default $IDEMPO_LEDGER)",
    )
    parser.add_argument("--config", help="the tools' kinds, keys and approvals (TOML or JSON)")
    options = parser.parse_args(argv)
    if not options.ledger:
        parser.error("no ledger: pass --ledger URL or set IDEMPO_LEDGER")
    try:
        config = load_config(options.config)
        anyio.run(serve, options.upstream, options.ledger, config)
    except Exception as error:
        leaf = _leaf(error)
        if isinstance(leaf, ConfigError):
            return _fail(f"configuration: {leaf}")
        if isinstance(leaf, UpstreamError):
            return _fail(str(leaf))
        if isinstance(leaf, IdempoError):
            return _fail(f"the ledger: {leaf}")
        raise
    return 0


def _leaf(error: BaseException) -> BaseException:
    # anyio's task groups wrap what their tasks raise in exception groups.
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def _fail(message: str) -> int:
    print(f"idempo-mcp-guard: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
