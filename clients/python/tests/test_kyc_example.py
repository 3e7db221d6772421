"""examples/kyc_onboarding end to end: real worker processes running the LangGraph graph, one
SIGKILLed after the core-banking provider opened an account and before the ledger recorded it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from .conftest import REPO, Cli

EXAMPLE = REPO / "examples" / "kyc_onboarding"


def run_example(cli: Cli, *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "kyc_run.py"), "--ledger", cli.url, "--idempo", cli.path,
         "--json", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(EXAMPLE)),
        check=False,
        timeout=120,
    )  # fmt: skip
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout.splitlines()[-1])


@pytest.mark.usefixtures("ledger_ready")
def test_one_account_per_client_after_kills(cli: Cli) -> None:
    status, report = run_example(cli, "--clients", "12", "--workers", "3", "--kills", "2")
    assert status == 0, report
    assert report["kills"] == 2
    assert report["accounts_per_client"] == {"1": 12}
    assert report["provider_accounts"] == 12
    # The model was asked once per client: the retried runs replayed the recorded decision.
    assert report["model_calls"] == 12
    for killed in report["killed"]:
        assert killed["model_calls"] == 1
        assert killed["decision_reused"], killed
        assert [a["risk"] for a in killed["accounts"]] == [killed["first_decision"]]
    # Each killed provisioning was settled by the provider's lookup, never run again.
    assert sorted(s["to"] for s in report["reconciled"]) == ["succeeded", "succeeded"]
    assert all(s["evidence"] == "found" for s in report["reconciled"])
    replayed = {(s["step"], s["outcome"]): s["count"] for s in report["suppressions"]}
    assert replayed[("compliance_check", "replayed")] >= 2
    assert replayed[("provision_account", "replayed")] >= 2
    assert not report["records_not_naming_the_account"]
    assert report["idempo_check"]["ok"], report["idempo_check"]
    assert report["dead_letters"] == 0


@pytest.mark.usefixtures("ledger_ready")
def test_without_the_guard_a_kill_opens_a_second_account(cli: Cli) -> None:
    status, report = run_example(
        cli, "--clients", "6", "--workers", "2", "--kills", "1", "--no-guard"
    )
    assert status == 0, report
    assert report["kills"] == 1
    assert report["accounts_per_client"] == {"1": 5, "2": 1}
    assert len(report["duplicate_accounts"]) == 1
