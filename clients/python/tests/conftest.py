"""Fixtures: a ledger made by the CLI's ``init`` on the server IDEMPO_TEST_POSTGRES_URL names, a
worker login with a password, and a fresh namespace per test."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from idempo import Ledger

WORKER = "py_worker"
WORKER_PASSWORD = "w0rker-s3cret-py"
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--idempo-cli",
        default=os.environ.get("IDEMPO_CLI", ""),
        help="the built idempo CLI (CTest passes $<TARGET_FILE:idempo>)",
    )


@dataclass(frozen=True)
class Cli:
    """The C++ CLI, run against the same ledger."""

    path: str
    url: str

    def run(self, *args: str, namespace: str | None = None) -> tuple[int, Any]:
        """Runs ``idempo --json ARGS``; its exit status and its JSON answer."""
        env = dict(os.environ)
        if namespace is not None:
            env["IDEMPO_NAMESPACE"] = namespace
        done = subprocess.run(
            [self.path, "--ledger", self.url, "--json", *args],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=60,
        )
        text = done.stdout.strip() or done.stderr.strip()
        try:
            return done.returncode, json.loads(text.splitlines()[-1]) if text else None
        except json.JSONDecodeError:
            return done.returncode, text


@pytest.fixture(scope="session")
def owner_url() -> str:
    url = os.environ.get("IDEMPO_TEST_POSTGRES_URL", "")
    if not url:
        pytest.skip("IDEMPO_TEST_POSTGRES_URL is not set (run through tests/pg/with-postgres.sh)")
    return url


@pytest.fixture(scope="session")
def cli(request: pytest.FixtureRequest, owner_url: str) -> Cli:
    path = str(request.config.getoption("--idempo-cli"))
    if not path:
        pytest.skip("no idempo CLI given (--idempo-cli or IDEMPO_CLI)")
    return Cli(path, owner_url)


@pytest.fixture(scope="session")
def ledger_ready(request: pytest.FixtureRequest, owner_url: str) -> str:
    """Makes the ledger with the CLI (once) and a worker login; the owner's URL."""
    path = str(request.config.getoption("--idempo-cli"))
    with psycopg.connect(owner_url, autocommit=True) as conn:
        ready = conn.execute("SELECT to_regnamespace('idempo') IS NOT NULL").fetchone()
        if not (ready and ready[0]):
            if not path:
                pytest.skip("the ledger is not initialised and no idempo CLI was given")
            subprocess.run(
                [path, "--ledger", owner_url, "init"], check=True, capture_output=True, timeout=120
            )
        conn.execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{WORKER}') THEN "
            f"CREATE ROLE {WORKER} LOGIN PASSWORD '{WORKER_PASSWORD}' IN ROLE idempo_worker; "
            "END IF; END $$"
        )
    return owner_url


def url_for(owner_url: str, user: str, password: str) -> str:
    """The owner's URL with another login."""
    rest = owner_url.split("://", 1)[1].split("@", 1)[1]
    return f"postgresql://{user}:{password}@{rest}"


@pytest.fixture(scope="session")
def worker_url(ledger_ready: str) -> str:
    return url_for(ledger_ready, WORKER, WORKER_PASSWORD)


@pytest.fixture
def ns() -> str:
    return "py-" + uuid.uuid4().hex[:12]


@pytest.fixture
def ledger(worker_url: str, ns: str) -> Iterator[Ledger]:
    with Ledger(worker_url, namespace=ns, owner="pytest") as opened:
        yield opened


@pytest.fixture
def owner(ledger_ready: str, ns: str) -> Iterator[Ledger]:
    with Ledger(ledger_ready, namespace=ns, owner="pytest-owner") as opened:
        yield opened


@pytest.fixture
def queue(ledger_ready: str) -> str:
    """A fresh queue (the owner creates queues), at most 3 reads before the dead-letter queue."""
    name = "pyq_" + uuid.uuid4().hex[:10]
    with psycopg.connect(ledger_ready, autocommit=True) as conn:
        conn.execute("SELECT * FROM idempo.queue_create(%s, 3)", (name,))
    return name


def count_rows(url: str, ns: str) -> tuple[int, int]:
    """Operations and suppressions recorded in a namespace."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM idempo.operations WHERE namespace = %s),"
            " (SELECT count(*) FROM idempo.suppressions WHERE namespace = %s)",
            (ns, ns),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])
