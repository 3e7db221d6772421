"""An upstream MCP server for the guard's tests (stdio), whose tools count their effects.

    python mcp_upstream.py --effects FILE [--delay SECONDS] [--die-on TOOL]

Every call of a tool appends one line ``tool<TAB>arguments`` to FILE (the test reads it back), so
the test sees how often the upstream really acted. Its annotations cover the guard's three kinds:
``balance`` is read-only, ``set_status`` idempotent, ``charge`` neither (a protected write), and
``refund`` answers an error result. ``--delay`` makes the consequential tools take that long
(for concurrent calls to overlap); ``--die-on TOOL`` makes the process exit right after TOOL's
effect, before it answers.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--effects", required=True, type=Path)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--die-on", default="")
    options = parser.parse_args()
    server = MCPServer("idempo-test-upstream")

    def act(tool: str, arguments: dict[str, object], *, consequential: bool = True) -> None:
        line = f"{tool}\t{json.dumps(arguments, sort_keys=True)}\n"
        with options.effects.open("a", encoding="utf-8") as journal:
            journal.write(line)
        if consequential and options.delay:
            time.sleep(options.delay)
        if options.die_on == tool:
            os._exit(3)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def balance(account: str) -> dict[str, object]:
        """The balance of an account (reads only)."""
        act("balance", {"account": account}, consequential=False)
        return {"account": account, "balance": 100}

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True))
    def set_status(ticket: str, status: str) -> str:
        """Sets a ticket's status (the same call twice changes nothing more)."""
        act("set_status", {"ticket": ticket, "status": status})
        return f"ticket {ticket} is {status}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def charge(invoice_id: str, amount: int) -> dict[str, object]:
        """Charges an invoice: each call is one more charge."""
        act("charge", {"invoice_id": invoice_id, "amount": amount})
        count = sum(1 for _ in options.effects.open(encoding="utf-8"))
        return {"invoice_id": invoice_id, "amount": amount, "charge_no": count}

    @server.tool()
    def refund(invoice_id: str) -> str:
        """Refunds an invoice; this provider always refuses."""
        act("refund", {"invoice_id": invoice_id})
        raise ToolError(f"invoice {invoice_id} cannot be refunded")

    server.run("stdio")


if __name__ == "__main__":
    main()
