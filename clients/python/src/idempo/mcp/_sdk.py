"""The MCP SDK (version 2) and anyio, as the guard uses them; an ImportError saying how to install
them when they are missing."""

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

__all__ = [
    "CONNECTION_CLOSED",
    "INVALID_PARAMS",
    "REQUEST_TIMEOUT",
    "ClientSession",
    "MCPError",
    "Server",
    "StdioServerParameters",
    "TaskGroup",
    "TaskStatus",
    "anyio",
    "stdio_client",
    "stdio_server",
    "streamable_http_client",
    "types",
]
