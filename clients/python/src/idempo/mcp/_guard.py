"""The guard's answer to each tools/call: a read passed straight through; any other call claimed
in the ledger under ``RUN:STEP:TOOL[:KEY ARGUMENTS]``, run upstream only when ``Claimed`` (its
lease kept while it runs) and its answer recorded."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from idempo.aio import AsyncLedger
from idempo.canonical import key_part
from idempo.errors import IdempoError, StaleLease
from idempo.mcp._config import ConfigError, GuardConfig, ToolConfig
from idempo.mcp._results import (
    RUN_ID_META,
    STATE_META,
    STATUS_META,
    STEP_ID_META,
    answer,
    error_result,
    failed_result,
    key_meta,
    text_of,
    with_meta,
)
from idempo.mcp._sdk import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    REQUEST_TIMEOUT,
    MCPError,
    Server,
    TaskGroup,
    anyio,
    types,
)
from idempo.mcp._upstream import Upstream, describe
from idempo.outcomes import Claimed


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


@dataclass(frozen=True, slots=True)
class _Call:
    """One guarded tools/call: the tool, its arguments and the ledger key they make."""

    name: str
    kind: str
    args: dict[str, Any]
    run_id: str
    step_id: str
    target: str
    key: str
    configured: ToolConfig


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
        if self.kinds[name] == "read":
            try:
                return await self.upstream.call(name, arguments, self._timeout(name))
            except Exception as error:
                return error_result(f"{name}: the upstream failed: {describe(error)}", "failed")
        call = self._named(name, arguments, meta)
        if isinstance(call, types.CallToolResult):
            return call
        try:
            outcome = await self.ledger.claim(
                call.key,
                call.args,
                tool_kind=call.kind,
                run_id=call.run_id,
                step_id=call.step_id,
                target=call.target,
                lease_ms=self.config.lease_ms,
                requires_approval=call.configured.requires_approval,
            )
            if isinstance(outcome, Claimed):
                return await self._run(call, outcome)
            return answer(name, call.key, outcome)
        except IdempoError as error:
            return error_result(
                f"{name}: the ledger refused {call.key!r}: {error}", "refused", **key_meta(call.key)
            )

    def _named(
        self, name: str, arguments: dict[str, Any] | None, meta: Mapping[str, Any]
    ) -> _Call | types.CallToolResult:
        """The call and its key; or, when the request cannot name them, the refusal."""
        kind = self.kinds[name]
        run_id, step_id = meta.get(RUN_ID_META), meta.get(STEP_ID_META)
        absent = [f for f, v in ((RUN_ID_META, run_id), (STEP_ID_META, step_id)) if not v]
        if absent or not isinstance(run_id, str) or not isinstance(step_id, str):
            return error_result(
                f"{name} is a {kind}: its call must carry the request _meta fields "
                f"{RUN_ID_META!r} and {STEP_ID_META!r} (strings; missing: "
                f"{', '.join(absent) or 'none, but not strings'}); nothing was run",
                "refused",
            )
        configured = self.config.tools.get(name) or ToolConfig()
        args = arguments or {}
        lacking = [a for a in configured.key_args if a not in args]
        if lacking:
            return error_result(
                f"{name}: the key argument(s) {', '.join(lacking)} are missing; nothing was run",
                "refused",
            )
        target = ":".join(key_part(args[a]) for a in configured.key_args)
        key = ":".join(key_part(part) for part in (run_id, step_id, name)) + (
            f":{target}" if target else ""
        )
        return _Call(name, kind, args, run_id, step_id, target, key, configured)

    async def _run(self, call: _Call, claimed: Claimed) -> types.CallToolResult:
        """Calls the upstream under the claim's lease, kept by a heartbeat; records its answer."""
        result: types.CallToolResult | None = None
        failure: BaseException | None = None
        async with anyio.create_task_group() as beats:
            beats.start_soon(self._heartbeat, call.key, claimed.token)
            try:
                result = await self.upstream.call(call.name, call.args, self._timeout(call.name))
            except Exception as error:
                failure = error
            beats.cancel_scope.cancel()
        if result is not None:
            return await self._record(call, claimed.token, result)
        return await self._record_failure(call, claimed.token, failure)

    async def _record(
        self, call: _Call, token: int, result: types.CallToolResult
    ) -> types.CallToolResult:
        """The upstream's answer recorded: a success completes, an error result fails."""
        key = call.key
        if not result.is_error:
            try:
                dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                await self.ledger.complete(key, token, dumped)
            except IdempoError as error:
                # The effect happened: its answer goes to the caller; the ledger's lease decides.
                print(f"idempo-mcp-guard: {key}: result not recorded: {error}", file=sys.stderr)
                return with_meta(result, **{STATUS_META: "unrecorded"}, **key_meta(key))
            return with_meta(result, **{STATUS_META: "executed"}, **key_meta(key))
        error_class = call.configured.error_class
        operation = await self.ledger.fail(key, token, error_class, text_of(result))
        return with_meta(
            result, **{STATUS_META: "failed", STATE_META: operation.state}, **key_meta(key)
        )

    async def _record_failure(
        self, call: _Call, token: int, failure: BaseException | None
    ) -> types.CallToolResult:
        """The upstream's call failed: a request it refused ran nothing; otherwise the outcome
        is unknown."""
        key = call.key
        if isinstance(failure, MCPError) and failure.code not in (
            CONNECTION_CLOSED,
            REQUEST_TIMEOUT,
        ):
            # The upstream refused the request itself: nothing was run.
            operation = await self.ledger.fail(key, token, "validation", failure.message)
        else:
            operation = await self.ledger.fail(key, token, "unknown_outcome", describe(failure))
        return failed_result(call.name, key, operation, f"the upstream failed: {describe(failure)}")

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
