"""The report of a run of the KYC example: the provider's accounts per client, what the workers
reported, the ledger's records and ``idempo check``; the checks behind the verdict, and the
report as text or one JSON object."""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from typing import Any

import psycopg
from psycopg import sql

from kyc_fleet import Observed
from kyc_setup import idempo_cli

# The accounts at the provider, per client: (account id, risk rating), oldest first.
Accounts = dict[str, list[tuple[str, str]]]

# `idempo check` reads these from the sandbox's effect journals, which this example's provider does
# not write (it knows no operation keys); the example checks the provider's side itself.
JOURNAL_INVARIANTS = ("at_most_one_effect", "receipt_matches_effect", "effect_recorded")


def idempo_check(cli: str, ledger: str, namespace: str) -> dict[str, Any]:
    """``idempo check`` of the namespace: the ledger's own invariants must hold."""
    status, out = idempo_cli(cli, ledger, "--json", "check", namespace=namespace)
    try:
        invariants = json.loads(out.splitlines()[0])["invariants"]
    except (ValueError, KeyError, IndexError):
        return {"exit": status, "ok": False, "output": out}
    ledger_side = {
        i["name"]: i["violations"] for i in invariants if i["name"] not in JOURNAL_INVARIANTS
    }
    return {
        "exit": status,
        "ok": not any(ledger_side.values()),
        "ledger_invariants": ledger_side,
        "journal_invariants_not_applicable": list(JOURNAL_INVARIANTS),
    }


def build_report(
    args: argparse.Namespace,
    namespace: str,
    queue_name: str,
    conn: psycopg.Connection[Any],
    observed: Observed,
    tag: str,
) -> dict[str, Any]:
    """What the run left at the provider and in the ledger, and whether every check holds."""
    opened, accounts = _provider_accounts(conn, tag)
    clients = [f"c-{tag}-{i:05d}" for i in range(1, args.clients + 1)]
    per_client = Counter(len(accounts[c]) for c in clients)
    report: dict[str, Any] = {
        "mode": "no_guard" if args.no_guard else "guarded",
        "namespace": namespace,
        "queue": queue_name,
        "clients": args.clients,
        "workers": args.workers,
        "kills": len(observed.crashes),
        "worker_restarts": observed.restarts,
        "provider_accounts": opened,
        "accounts_per_client": {str(k): v for k, v in sorted(per_client.items())},
        "duplicate_accounts": {
            c: [a for a, _ in accounts[c]] for c in clients if len(accounts[c]) > 1
        },
        "decisions_swapped": {
            c: [r for _, r in accounts[c]] for c in clients if len({r for _, r in accounts[c]}) > 1
        },
        "model_calls": sum(len(v) for v in observed.model.values()),
        "errors": observed.errors,
        "dead_letters": _dead_letters(conn, queue_name),
        "killed": _killed(observed, accounts),
    }
    if args.no_guard:
        report["ok"] = per_client == Counter({1: args.clients})
        return report
    report |= _ledger_side(conn, namespace, clients, accounts, report["killed"])
    report["ok"] = (
        per_client == Counter({1: args.clients})
        and not report["clients_not_matching_ledger"]
        and all(entry["decision_reused"] for entry in report["killed"])
        and not report["records_not_naming_the_account"]
        and report["dead_letters"] == 0
    )
    return report


def _provider_accounts(conn: psycopg.Connection[Any], tag: str) -> tuple[int, Accounts]:
    """How many accounts the provider opened for the run's clients, and which, per client."""
    rows = conn.execute(
        "SELECT client_ref, account_id, risk FROM core_banking.accounts "
        "WHERE client_ref LIKE %s ORDER BY seq",
        (f"c-{tag}-%",),
    ).fetchall()
    accounts: Accounts = defaultdict(list)
    for client, account, risk in rows:
        accounts[client].append((account, risk))
    return len(rows), accounts


def _dead_letters(conn: psycopg.Connection[Any], queue_name: str) -> int:
    dead = conn.execute(
        sql.SQL("SELECT count(*) FROM pgmq.{}").format(sql.Identifier(f"q_{queue_name}_dlq"))
    ).fetchone()
    return int(dead[0]) if dead else 0


def _killed(observed: Observed, accounts: Accounts) -> list[dict[str, Any]]:
    """Each client whose worker was killed: its first decision, the model's calls, its accounts."""
    killed = []
    for crash in observed.crashes:
        client = crash["client"]
        first = observed.model[client][0] if observed.model[client] else None
        killed.append(
            {
                "client": client,
                "worker": crash["worker"],
                "first_decision": first,
                "model_calls": len(observed.model[client]),
                "accounts": [{"account_id": a, "risk": r} for a, r in accounts[client]],
            }
        )
    return killed


def _ledger_side(
    conn: psycopg.Connection[Any],
    namespace: str,
    clients: list[str],
    accounts: Accounts,
    killed: list[dict[str, Any]],
) -> dict[str, Any]:
    """The ledger's records beside the provider's accounts; each killed client's entry gains the
    decision the ledger recorded and whether it was reused."""
    recorded = _recorded_accounts(conn, namespace)
    decisions = _recorded_decisions(conn, namespace)
    # The decision the ledger recorded first, beside the account the provider holds.
    mismatched = [
        c
        for c in clients
        if len(accounts[c]) != 1 or decisions.get(c.replace("c-", "kyc-", 1)) != accounts[c][0][1]
    ]
    for entry in killed:
        client = entry["client"]
        entry["ledger_decision"] = decisions.get(client.replace("c-", "kyc-", 1))
        entry["decision_reused"] = entry["first_decision"] == entry["ledger_decision"] and all(
            a["risk"] == entry["first_decision"] for a in entry["accounts"]
        )
    return {
        "states": _states(conn, namespace),
        "suppressions": _suppressions(conn, namespace),
        "clients_not_matching_ledger": mismatched,
        "records_not_naming_the_account": [
            c for c in clients if not accounts[c] or recorded.get(c) != accounts[c][0][0]
        ],
    }


def _recorded_accounts(conn: psycopg.Connection[Any], namespace: str) -> dict[str, str | None]:
    """The account each provisioning's record names: its result (the step's answer) or, once
    reconciled, its receipt (the provider's reference)."""
    recorded: dict[str, str | None] = {}
    for client, result, receipt in conn.execute(
        "SELECT payload::jsonb ->> 'client_ref', nullif(result, '')::jsonb ->> 'account_id', "
        "nullif(receipt, '')::jsonb ->> 'external_reference' FROM idempo.operations "
        "WHERE namespace = %s AND step_id = 'provision_account'",
        (namespace,),
    ).fetchall():
        recorded[client] = result or receipt
    return recorded


def _recorded_decisions(conn: psycopg.Connection[Any], namespace: str) -> dict[str, Any]:
    """The compliance decision the ledger recorded, per run."""
    return {
        row[0]: json.loads(row[1])["risk"]
        for row in conn.execute(
            "SELECT run_id, result FROM idempo.operations WHERE namespace = %s "
            "AND step_id = 'compliance_check' AND state = 'succeeded'",
            (namespace,),
        ).fetchall()
    }


def _states(conn: psycopg.Connection[Any], namespace: str) -> dict[str, int]:
    """The records per step and state."""
    return dict(
        conn.execute(
            "SELECT step_id || ':' || state, count(*) FROM idempo.operations "
            "WHERE namespace = %s GROUP BY 1 ORDER BY 1",
            (namespace,),
        ).fetchall()
    )


def _suppressions(conn: psycopg.Connection[Any], namespace: str) -> list[dict[str, Any]]:
    """The calls the ledger answered without running them, per step, outcome and state."""
    return [
        {"step": step, "outcome": outcome, "state": state, "count": count}
        for step, outcome, state, count in conn.execute(
            "SELECT o.step_id, s.outcome, s.state, count(*) FROM idempo.suppressions AS s "
            "JOIN idempo.operations AS o ON o.namespace = s.namespace "
            "AND o.operation_key = s.operation_key WHERE s.namespace = %s "
            "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
            (namespace,),
        ).fetchall()
    ]


def print_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report))
        return
    _print_accounts(report)
    _print_ledger(report)
    if report["dead_letters"]:
        print(f"  dead letters: {report['dead_letters']}")
    if report["timed_out"]:
        print("  TIMED OUT before every request was done")
    verdict = "one account per client" if report["ok"] else "NOT one account per client"
    print(f"  => {verdict}; namespace {report['namespace']}")


def _print_accounts(report: dict[str, Any]) -> None:
    """The run, the provider's accounts and the killed clients."""
    print(
        f"KYC onboarding, {report['mode']}: {report['clients']} clients, {report['workers']} "
        f"workers, {report['kills']} killed after the provider opened an account, "
        f"{report['wall_s']} s"
    )
    per = ", ".join(
        f"{n} account(s): {c} clients" for n, c in report["accounts_per_client"].items()
    )
    print(f"  accounts at the provider: {report['provider_accounts']} ({per})")
    for client, ids in report["duplicate_accounts"].items():
        print(f"  DUPLICATE {client}: {', '.join(ids)}")
    for client, risks in report["decisions_swapped"].items():
        print(f"  DECISION SWAPPED {client}: {' then '.join(risks)}")
    print(f"  model calls: {report['model_calls']} for {report['clients']} clients")
    for entry in report["killed"]:
        accounts = ", ".join(f"{a['account_id']} ({a['risk']})" for a in entry["accounts"])
        line = (
            f"  killed {entry['worker']} on {entry['client']}: first decision "
            f"{entry['first_decision']}, model asked {entry['model_calls']}x, accounts: {accounts}"
        )
        if "ledger_decision" in entry:
            line += (
                f"; ledger's decision {entry['ledger_decision']}"
                f" -> {'reused' if entry['decision_reused'] else 'NOT REUSED'}"
            )
        print(line)


def _print_ledger(report: dict[str, Any]) -> None:
    """What the ledger settled, replayed and holds, and ``idempo check``."""
    for settled in report.get("reconciled", []):
        print(
            f"  reconciled {settled['key']}: provider {settled['evidence']} "
            f"{settled['reference'] or ''} ({settled['from']} -> {settled['to']})"
        )
    for s in report.get("suppressions", []):
        print(f"  suppressed {s['count']}x {s['step']}: {s['outcome']} ({s['state']})")
    if "states" in report:
        print("  ledger: " + ", ".join(f"{k} {v}" for k, v in report["states"].items()))
    if "idempo_check" in report:
        check = report["idempo_check"]
        names = ", ".join(check.get("ledger_invariants", {}))
        print(
            f"  idempo check, the ledger's invariants ({names}): "
            f"{'clean' if check['ok'] else 'VIOLATED'}"
        )
    for name in ("clients_not_matching_ledger", "records_not_naming_the_account"):
        if report.get(name):
            print(f"  {name}: {', '.join(report[name][:10])}")
