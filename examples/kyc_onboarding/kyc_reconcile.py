"""The operator's side of a run of the KYC example: each provisioning whose worker died is
settled by the provider's lookup, recorded in the ledger with ``idempo.reconcile``."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from kyc_graph import Provider
from kyc_setup import log


class Reconciler:
    """Settles each provisioning whose worker died: looks the client up at the provider and
    records the answer in the ledger as the operator (``idempo.reconcile``)."""

    FIND = """
        SELECT operation_key, payload::jsonb ->> 'client_ref', state FROM idempo.operations
        WHERE namespace = %s AND step_id = 'provision_account'
          AND (state = 'unknown_outcome'
               OR (state = 'dispatching' AND lease_expires_at_ms <= idempo.now_ms()))
    """

    def __init__(self, operator: str, namespace: str, provider: Provider) -> None:
        self.conn = psycopg.connect(operator, autocommit=True)
        self.namespace = namespace
        self.provider = provider
        self.settled: list[dict[str, Any]] = []

    def run_once(self) -> None:
        for key, client, state in self.conn.execute(self.FIND, (self.namespace,)).fetchall():
            evidence = self.evidence(client)
            try:
                moved = self.conn.execute(
                    "SELECT from_state, to_state FROM idempo.reconcile(%s, %s, %s, %s)",
                    (
                        self.namespace,
                        key,
                        json.dumps(evidence),
                        f"provider lookup by client reference {client}",
                    ),
                ).fetchone()
            except psycopg.Error as error:
                if error.sqlstate == "ID007":  # settled or taken meanwhile
                    continue
                raise
            assert moved is not None
            self.settle(key, client, state, moved, evidence)

    def evidence(self, client: str) -> dict[str, Any]:
        """The provider's answer to a lookup of ``client``'s accounts."""
        accounts = self.provider.accounts_of(client)
        evidence: dict[str, Any] = {
            "provider": "core-banking",
            "answer": {"accounts": accounts},
        }
        if accounts:
            evidence |= {"status": "found", "reference": accounts[0]["account_id"]}
        else:
            evidence |= {"status": "not_found"}
        return evidence

    def settle(
        self, key: str, client: str, state: str, moved: tuple[Any, ...], evidence: dict[str, Any]
    ) -> None:
        """Keeps and logs a provisioning the ledger moved from ``moved[0]`` to ``moved[1]``."""
        self.settled.append(
            {
                "key": key,
                "client": client,
                "was": state,
                "from": moved[0],
                "to": moved[1],
                "evidence": evidence["status"],
                "reference": evidence.get("reference"),
            }
        )
        log(
            f"reconciled {key}: provider {evidence['status']} "
            f"{evidence.get('reference', '')} ({moved[0]} -> {moved[1]})"
        )

    def close(self) -> None:
        self.conn.close()
