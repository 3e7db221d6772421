"""The KYC onboarding graph: document extraction → compliance → account provisioning.

Three agents as the nodes of one LangGraph ``StateGraph``, checkpointed in PostgreSQL:

- ``extract_documents`` reads the client's documents (a deterministic parser stands in for OCR);
- ``compliance_check`` asks a model for a decision; the model is a random draw on each call, as an
  LLM at temperature > 0 answers differently each time. With the ledger it is a ``read`` step:
  recorded once, replayed on every retry, so a retried run never swaps its decision;
- ``provision_account`` opens the account at the core-banking provider, which honours no key.
  With the ledger it is a ``protected_write`` step: run at most once; a worker that died after the
  provider answered leaves it for reconciliation, never for a second account.

Without a ledger (``--no-guard``) the same nodes call the model and the provider directly.
"""

from __future__ import annotations

import json
import random
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, TypedDict

from idempo import Ledger, OnPending
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

# Where a worker may be made to crash (KYC_CRASH_AT): right after the provider opened the account,
# before the ledger records it and before the queue's ack.
CRASH_POINTS = ("after_account",)
RISKS = ("low", "medium", "high")


class Onboarding(TypedDict, total=False):
    """The graph's state for one client."""

    run_id: str
    client_ref: str
    name: str
    documents: dict[str, str]
    extracted: dict[str, str]
    decision: dict[str, Any]
    account: dict[str, Any]


Emit = Callable[[dict[str, Any]], None]
Fault = Callable[[str, str], None]


def ask_model(extracted: dict[str, str]) -> dict[str, Any]:
    """The compliance model: a fresh random decision on every call (temperature > 0)."""
    risk = random.SystemRandom().choices(RISKS, weights=(6, 3, 1))[0]
    return {"verdict": "approve", "risk": risk, "reviewed": extracted["passport"]}


class Provider:
    """The core-banking provider's HTTP API (kyc_provider.py)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def open_account(self, client_ref: str, name: str, risk: str) -> dict[str, Any]:
        body = json.dumps({"client_ref": client_ref, "name": name, "risk": risk}).encode()
        request = urllib.request.Request(
            f"{self.url}/accounts",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            account: dict[str, Any] = json.load(answer)
        return account

    def accounts_of(self, client_ref: str) -> list[dict[str, Any]]:
        """The lookup by client reference: every account the provider holds for it."""
        query = urllib.parse.urlencode({"client_ref": client_ref})
        with urllib.request.urlopen(f"{self.url}/accounts?{query}", timeout=10) as answer:
            accounts: list[dict[str, Any]] = json.load(answer)["accounts"]
        return accounts


class Agents:
    """The three nodes, over a ledger (None: unguarded), the provider, an event sink and a fault
    hook called at each of ``CRASH_POINTS`` with the point and the client."""

    def __init__(
        self,
        ledger: Ledger | None,
        provider: Provider,
        *,
        emit: Emit,
        fault: Fault,
        lease_ms: int = 3_000,
        deadline_s: float = 60.0,
    ) -> None:
        self.ledger = ledger
        self.provider = provider
        self.emit = emit
        self.fault = fault
        self.lease_ms = lease_ms
        self.deadline_s = deadline_s

    def extract_documents(self, state: Onboarding) -> Onboarding:
        passport, name, born = state["documents"]["passport"].split("|")
        return {
            "extracted": {
                "passport": passport,
                "name": name,
                "born": born,
                "address": state["documents"]["proof_of_address"],
            }
        }

    def _ask(self, state: Onboarding) -> dict[str, Any]:
        decision = ask_model(state["extracted"])
        self.emit({"event": "model", "client": state["client_ref"], "risk": decision["risk"]})
        return decision

    def compliance_check(self, state: Onboarding) -> Onboarding:
        if self.ledger is None:
            return {"decision": self._ask(state)}
        with self.ledger.step(
            "compliance_check",
            run_id=state["run_id"],
            payload=state["extracted"],
            tool_kind="read",
            lease_ms=self.lease_ms,
            on_pending=OnPending.WAIT,
            deadline_s=self.deadline_s,
        ) as step:
            if step.should_run:
                step.result = self._ask(state)
        return {"decision": step.result}

    def _open(self, state: Onboarding, risk: str) -> dict[str, Any]:
        client = state["client_ref"]
        account = self.provider.open_account(client, state["extracted"]["name"], risk)
        self.emit({"event": "account", "client": client, "account": account["account_id"]})
        self.fault("after_account", client)
        return account

    def provision_account(self, state: Onboarding) -> Onboarding:
        risk = state["decision"]["risk"]
        if self.ledger is None:
            return {"account": self._open(state, risk)}
        request = {
            "client_ref": state["client_ref"],
            "name": state["extracted"]["name"],
            "risk": risk,
        }
        with self.ledger.step(
            "provision_account",
            run_id=state["run_id"],
            target=state["client_ref"],
            payload=request,
            tool_kind="protected_write",
            lease_ms=self.lease_ms,
            on_pending=OnPending.WAIT,
            deadline_s=self.deadline_s,
        ) as step:
            if step.should_run:
                step.result = self._open(state, risk)
        account = step.result
        if account is None:
            # Settled by reconciliation: the provider's reference is the receipt.
            receipt = json.loads(self.ledger.show(step.key).receipt or "{}")
            account = {"account_id": receipt.get("external_reference"), "reconciled": True}
        return {"account": account}


def build_graph(
    agents: Agents, checkpointer: BaseCheckpointSaver[Any]
) -> CompiledStateGraph[Onboarding, None, Onboarding, Onboarding]:
    """The three agents in a row, checkpointed by ``checkpointer`` under the thread of each run."""
    graph = StateGraph(Onboarding)
    graph.add_node("extract_documents", agents.extract_documents)
    graph.add_node("compliance_check", agents.compliance_check)
    graph.add_node("provision_account", agents.provision_account)
    graph.add_edge(START, "extract_documents")
    graph.add_edge("extract_documents", "compliance_check")
    graph.add_edge("compliance_check", "provision_account")
    graph.add_edge("provision_account", END)
    return graph.compile(checkpointer=checkpointer)
