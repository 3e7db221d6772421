"""The upstream MCP server behind the guard: started (a command on stdio, or a Streamable HTTP
URL), its tools listed and called, and connected again when the connection is lost."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from idempo.mcp._sdk import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    ClientSession,
    MCPError,
    StdioServerParameters,
    TaskGroup,
    TaskStatus,
    anyio,
    stdio_client,
    streamable_http_client,
    types,
)


class UpstreamError(RuntimeError):
    """The upstream MCP server could not be started or reached."""


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
                        f"{describe(failure)}" + (hint if isinstance(failure, MCPError) else "")
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


def describe(error: BaseException | None) -> str:
    """An upstream failure in a few words (an exception group: each of its errors)."""
    if error is None:
        return "no session"
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(e) for e in error.exceptions)
    if isinstance(error, MCPError):
        return error.message
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename or ''}".rstrip(": ")
    return str(error) or type(error).__name__
