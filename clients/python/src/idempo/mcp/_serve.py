"""The guard as a program: ``idempo-mcp-guard`` (or ``python -m idempo.mcp``) connects the
ledger, starts the upstream and serves MCP on stdio until its client goes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from idempo.aio import AsyncLedger
from idempo.errors import IdempoError, SchemaMismatch
from idempo.mcp._config import ConfigError, GuardConfig, load_config
from idempo.mcp._guard import Guard
from idempo.mcp._sdk import anyio, stdio_server
from idempo.mcp._upstream import Upstream, UpstreamError


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
    parser = _parser()
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


def _parser() -> argparse.ArgumentParser:
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
    return parser


def _leaf(error: BaseException) -> BaseException:
    # anyio's task groups wrap what their tasks raise in exception groups.
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def _fail(message: str) -> int:
    print(f"idempo-mcp-guard: {message}", file=sys.stderr)
    return 2
