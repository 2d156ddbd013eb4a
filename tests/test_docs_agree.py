"""Docs that the code must not contradict: docs/protocol.md's codes table spells each enum value as the CLI
prints it (tables, flags and ``--json`` alike), and the protocol page keeps to the protocol (the referee's
speed history lives in docs/benchmarks.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from arena.cli.common import enum_text, proto_json
from referee.wire import arena_pb2, bot_pb2, match_pb2

ROOT = Path(__file__).resolve().parents[1]
ENUMS: list[Any] = [bot_pb2.RefusalCode, match_pb2.EndReason, match_pb2.SeatStatus, arena_pb2.MatchState]


def test_the_codes_table_spells_values_as_the_cli_prints_them() -> None:
    doc = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| \d+ \| `([a-z_]+)` \|", doc, flags=re.M))
    for enum in ENUMS:
        for value in enum.DESCRIPTOR.values:
            if value.number:
                assert rows[value.name] == enum_text(enum.DESCRIPTOR, value.number), value.name
    assert proto_json(arena_pb2.MatchRecord(state=arena_pb2.MATCH_STATE_FINISHED))["state"] == "finished"
    header = next(line for line in doc.splitlines() if line.startswith("| proto name"))
    assert "`--json`" in header.split("|")[3], "the CLI's --json spells values in lower case, as its tables do"


def test_the_protocol_page_keeps_to_the_protocol() -> None:
    protocol = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert "benchmarks.md#the-referees-speed" in protocol and "## The referee's speed" in benchmarks
    assert "--compare" not in protocol and " us " not in protocol  # no benchmark runs, no timings
