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

Its parts: ``_config`` (the configuration), ``_upstream`` (the upstream server), ``_guard`` (each
call's answer), ``_results`` (the ``_meta`` fields and the answers that run nothing) and
``_serve`` (the program).
"""

from idempo.mcp._config import ConfigError, GuardConfig, ToolConfig, load_config
from idempo.mcp._config import parse_config as parse_config
from idempo.mcp._guard import Guard
from idempo.mcp._guard import kind_of as kind_of
from idempo.mcp._results import KEY_META as KEY_META
from idempo.mcp._results import RUN_ID_META, STATUS_META, STEP_ID_META
from idempo.mcp._results import STATE_META as STATE_META
from idempo.mcp._serve import main
from idempo.mcp._serve import running as running
from idempo.mcp._serve import serve as serve
from idempo.mcp._upstream import Upstream as Upstream
from idempo.mcp._upstream import UpstreamError

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

# Named idempo.mcp.X, as where they are documented: in tracebacks, reprs and pickles.
for _public in (
    ConfigError,
    Guard,
    GuardConfig,
    ToolConfig,
    Upstream,
    UpstreamError,
    kind_of,
    load_config,
    main,
    parse_config,
    running,
    serve,
):
    _public.__module__ = __name__
del _public
