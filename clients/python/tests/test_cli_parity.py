"""The Python fingerprint and refusals equal the C++ engine's, checked against the real CLI."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

import idempo
from idempo import Claimed, InProgress, JsonText, Ledger, Replayed, fingerprint

from .conftest import REPO, Cli, count_rows

VECTORS = REPO / "tests" / "testdata" / "rfc8785"

PAYLOAD = {
    "a": 1,
    "b": [10, {"x": "y"}],
    "a/b": 2,
    "m~n": 3,
    "": 4,
    "s": "str",
    "n": None,
    "\u00e9": 5,
    "\U0001f600": 6,
    "f": 1.5e300,
    "arr": [0, 1, 2],
}
PROJECTIONS = [
    ["/a"],
    ["/b/1/x", "/a"],
    ["/a~1b"],
    ["/m~0n"],
    ["/"],
    ["/arr/01", "/a"],
    ["/arr/-", "/a"],
    ["/s/0", "/a"],
    ["/n/x", "/a"],
    ["/\u00e9", "/\U0001f600"],
    ["/arr/2", "/arr/10", "/a"],
    ["/a", "/a"],
    ["/b"],
    ["/f"],
]
# Whole numbers beyond 2^53: refused unless a double holds them exactly, as the engine decides.
NUMBERS = [
    "9007199254740992",
    "9007199254740993",
    "-9007199254740993",
    "18446744073709551616",
    "18446744073709551617",
    "123456789012345678901234567890",
    "100000000000000000000000",
    "1152921504606846976",
    "1e400",
    "-0",
    "1E2",
    "0.1",
    "-1e-30",
    "4.50",
]


def double(bits: str) -> float:
    """The double of numbers.csv's hex bits (C++'s toULongLong(16) takes "0" too)."""
    value: float = struct.unpack(">d", bytes.fromhex(bits.zfill(16)))[0]
    return value


def vector_texts() -> list[tuple[str, str]]:
    cases = [
        (p.name, p.read_text(encoding="utf-8")) for p in sorted((VECTORS / "input").glob("*.json"))
    ]
    for line in (VECTORS / "numbers.csv").read_text().strip().splitlines()[1:]:
        bits = line.split(",")[0]
        value = double(bits)
        cases.append((f"csv-{bits}", f"[{value!r}]"))
    return cases


def test_vectors_canonicalise_to_their_output() -> None:
    for path in sorted((VECTORS / "input").glob("*.json")):
        expected = (VECTORS / "output" / path.name).read_bytes().decode("utf-8")
        assert idempo.canonical_json(JsonText(path.read_bytes())) == expected, path.name
    for line in (VECTORS / "numbers.csv").read_text().strip().splitlines()[1:]:
        bits, expected = line.split(",")
        value = double(bits)
        assert idempo.canonical_json(value) == expected, bits


def cli_claim(
    cli: Cli, ns: str, key: str, payload: str, fields: list[str] | None = None
) -> tuple[int, Any]:
    args = ["claim", key, "--payload", payload]
    if fields:
        args += ["--fingerprint-fields", ",".join(fields)]
    return cli.run(*args, namespace=ns)


def python_claim(ledger: Ledger, key: str, payload: Any, fields: list[str] | None = None) -> Any:
    try:
        return ledger.claim(key, payload, fingerprint_fields=fields or ())
    except idempo.IdempoError as error:
        return error


def test_fingerprints_equal_the_engines(cli: Cli, ledger: Ledger, ns: str) -> None:
    cases: list[tuple[str, str, list[str] | None]] = [(n, t, None) for n, t in vector_texts()]
    cases += [(f"proj-{i}", json.dumps(PAYLOAD), f) for i, f in enumerate(PROJECTIONS)]
    cases += [(f"num-{i}", f'{{"n":[{t}]}}', None) for i, t in enumerate(NUMBERS)]
    refused = 0
    for i, (name, text, fields) in enumerate(cases):
        key = f"run-fp:{i}"
        status, answer = cli_claim(cli, ns, key, text, fields)
        mine = python_claim(ledger, key, JsonText(text), fields)
        if status != 0:
            # The engine refused it: Python refuses it the same way, and nothing was written.
            assert isinstance(mine, idempo.IdempoError), (name, answer)
            assert mine.code == answer["error"], (name, answer, mine)
            refused += 1
            continue
        assert answer["outcome"] == "claimed", (name, answer)
        expected = fingerprint(JsonText(text), fields or ())
        assert answer["operation"]["payload_fingerprint"] == expected.fingerprint, name
        assert ledger.show(key).payload == expected.payload, name
        assert isinstance(mine, InProgress), (name, mine)  # never payload_mismatch
    assert refused == 6  # 2^53 + 1 twice, 2^64 + 1, the two long literals, 1e400


def test_cli_claim_replayed_from_python_and_back(cli: Cli, ledger: Ledger) -> None:
    ns = ledger.namespace
    text = '{"amount": 1250, "currency": "EUR", "ratio": 0.1, "when": 1e21, "to": "caf\\u00e9"}'
    status, answer = cli_claim(cli, ns, "run-x:cli", text)
    assert status == 0 and answer["outcome"] == "claimed"
    token = str(answer["fencing_token"])
    assert (
        cli.run("complete", "run-x:cli", "--token", token, "--result", '{"ok":true}', namespace=ns)[
            0
        ]
        == 0
    )
    again = ledger.claim(
        "run-x:cli",
        {"to": "caf\u00e9", "when": 1e21, "ratio": 0.1, "currency": "EUR", "amount": 1250},
    )
    assert isinstance(again, Replayed) and again.result == {"ok": True}

    mine = ledger.claim("run-x:py", {"order": "o-7", "at": 1}, fingerprint_fields=["/order"])
    assert isinstance(mine, Claimed)
    ledger.complete("run-x:py", mine.token, {"refund": "rf_7"})
    status, answer = cli_claim(cli, ns, "run-x:py", '{"at": 2, "order": "o-7"}')
    assert (status, answer["outcome"]) == (0, "replayed")
    status, answer = cli_claim(cli, ns, "run-x:py", '{"at": 2, "order": "o-7"}', ["/order"])
    assert (status, answer["outcome"]) == (0, "replayed")


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("", "{}", {}),
        (" padded", "{}", {}),
        ("k\x01", "{}", {}),
        ("x" * 256, "{}", {}),
        ("run:bad", "{nope", JsonText("{nope")),
        ("run:nan", '{"n": NaN}', {"n": float("nan")}),
        ("run:dup", '{"a": 1, "a": 2}', JsonText('{"a": 1, "a": 2}')),
        ("run:big", '{"n": 9007199254740993}', {"n": 2**53 + 1}),
    ],
)
def test_bad_input_refused_as_the_cli_refuses_it(
    cli: Cli, ledger: Ledger, worker_url: str, key: str, text: str, value: Any
) -> None:
    ns = ledger.namespace
    status, answer = cli_claim(cli, ns, key, text)
    mine = python_claim(ledger, key, value)
    assert status != 0 and isinstance(mine, idempo.IdempoError)
    assert mine.code == answer["error"], (answer, mine)
    assert count_rows(worker_url, ns) == (0, 0)


def test_oversized_and_wrong_token_refused_as_the_cli(
    cli: Cli, ledger: Ledger, worker_url: str, tmp_path: Path
) -> None:
    ns = ledger.namespace
    big = {"blob": "x" * (1 << 20)}
    (tmp_path / "big.json").write_text(json.dumps(big))
    status, answer = cli_claim(cli, ns, "run-o:big", f"@{tmp_path / 'big.json'}")
    mine = python_claim(ledger, "run-o:big", big)
    assert status != 0 and mine.code == answer["error"] == "payload_too_large"
    assert count_rows(worker_url, ns) == (0, 0)

    first = ledger.claim("run-o:tok", {})
    assert isinstance(first, Claimed)
    before = ledger.history("run-o:tok")
    status, answer = cli.run("complete", "run-o:tok", "--token", str(first.token + 7), namespace=ns)
    with pytest.raises(idempo.StaleLease) as raised:
        ledger.complete("run-o:tok", first.token + 7)
    assert status != 0 and raised.value.code == answer["error"]
    assert ledger.history("run-o:tok") == before
