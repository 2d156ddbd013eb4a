"""``--json`` as a script reads it (issue 14): every command that prints a result takes it, stdout holds one
strict JSON value and nothing else, every field is there at its default value too, enum values are spelled
as the command line spells them, and no number is NaN or infinite. Each command runs in its own process
with stdout piped, against a real arena (gateway, worker, Redis) where it needs one; docs/cli.md must list
exactly the commands that take ``--json``."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from arena.cli.common import enum_text, json_text, proto_json
from arena.cli.main import build_parser
from arena.ladder.service import host_ladder
from arena.local.arena import LocalArena
from arena.service.client import ArenaClient
from referee.wire import arena_pb2, bot_pb2, ladder_pb2, match_pb2
from referee.wire.contract import _PROTO_ENUMS
from referee.wire.values import MatchStatus
from tests.helpers import arena

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "transcripts"
DEAD = "127.0.0.1:1"
SERVICES = {"serve", "gateway", "worker", "web", "ladder run", "referee serve", "proxy-config"}
"""The commands that print no result (they log JSON lines) and so take no ``--json``; ``proxy-config``
prints or writes nginx's config, a file in nginx's own format, and with ``--watch`` is a service."""

BOT_FIELDS = {f.name for f in arena_pb2.BotRecord.DESCRIPTOR.fields}
OWNER_FIELDS = {f.name for f in arena_pb2.OwnerRecord.DESCRIPTOR.fields}
MATCH_FIELDS = {f.name for f in arena_pb2.MatchRecord.DESCRIPTOR.fields}
RESULT_FIELDS = {f.name for f in match_pb2.MatchResult.DESCRIPTOR.fields}
SEAT_FIELDS = {f.name for f in match_pb2.SeatResult.DESCRIPTOR.fields}
LADDER_ROW = {"rank", "owner", "name", "version", "rating", "games", "wins", "draws", "losses", "last_played", "info",
              "error", "provisional", "fit"}  # fmt: skip


def _no_constant(name: str) -> Any:
    raise AssertionError(f"stdout holds {name}, which is not JSON")


def strict(text: str) -> Any:
    """stdout parsed as a strict parser does: one JSON value on one line, no NaN or Infinity."""
    assert text.endswith("\n") and text.count("\n") == 1, f"not one line of JSON: {text[:300]!r}"
    return json.loads(text, parse_constant=_no_constant)


def out(*args: str) -> Any:
    """The JSON document ``arena ARGS`` prints (it must exit 0)."""
    return strict(arena(*args, check=0).stdout)


def finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, list):
        return all(finite(v) for v in value)
    return True


# ------------------------------------------------------------------ which commands, and the doc


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every leaf command of ``arena`` (``bot list``, ``demo`` ...) and its parser; ``matches`` is an alias."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if name == "matches":
                    continue
                found.update(_commands(sub, f"{prefix} {name}".strip()))
    return found or {prefix: parser}


def test_every_command_but_the_services_takes_json_and_docs_list_each() -> None:
    commands = _commands(build_parser())
    takes = {name for name, p in commands.items() if "--json" in p._option_string_actions}
    assert set(commands) - takes == SERVICES
    doc = (ROOT / "docs" / "cli.md").read_text()
    documented = set(re.findall(r"^\| `arena ([a-z0-9 -]+)` \|", doc, flags=re.M))
    assert documented == takes
    for fields in (BOT_FIELDS, OWNER_FIELDS, MATCH_FIELDS, RESULT_FIELDS, SEAT_FIELDS):
        assert all(f"`{f}`" in doc for f in fields), fields - {f for f in fields if f"`{f}`" in doc}


# ------------------------------------------------------------------ the conversion itself


def test_messages_keep_every_field_and_spell_enums_as_the_flags() -> None:
    record = arena_pb2.MatchRecord(match_id="m", state=arena_pb2.MATCH_STATE_QUEUED, finished_at=math.inf)
    doc = proto_json(record)
    assert list(doc) == [f.name for f in arena_pb2.MatchRecord.DESCRIPTOR.fields]  # declaration order, all
    assert doc["state"] == "queued" and doc["rated"] is False and doc["bot_names"] == [] and doc["result"] is None
    assert doc["finished_at"] is None and doc["started_at"] == 0.0  # inf is null; a real 0.0 stays
    assert proto_json(arena_pb2.MatchRecord())["state"] is None  # *_UNSPECIFIED
    seat = proto_json(match_pb2.SeatResult(status=match_pb2.SEAT_STATUS_FORFEITED))
    assert seat["seat"] == 0 and seat["status"] == "forfeited"
    turn = proto_json(bot_pb2.Turn(turn_id=2**63))
    assert turn["turn_id"] == 2**63  # a number, not protobuf's string
    # the spelling of every enum the CLI shows is the Python value the flags and Redis use
    for cls, (wrapper, _prefix) in _PROTO_ENUMS.items():
        for value in cls:
            number = wrapper.Value(_prefix + value.value.upper())
            assert enum_text(wrapper.DESCRIPTOR, number) == value.value
    assert [enum_text(arena_pb2.MatchState.DESCRIPTOR, n) for n in (1, 2, 3)] == [s.value for s in MatchStatus]
    status = ladder_pb2.RatingStatus.DESCRIPTOR
    assert enum_text(status, ladder_pb2.RATING_STATUS_PROVISIONAL) == "provisional"
    assert enum_text(status, 99) is None


def test_numbers_that_are_not_finite_are_null_and_nothing_else_passes() -> None:
    assert json.loads(json_text({"a": math.inf, "b": [math.nan, -math.inf, 1.5], "c": (Path("x"),)})) == {
        "a": None, "b": [None, None, 1.5], "c": ["x"]}  # fmt: skip
    with pytest.raises(TypeError, match="no JSON form for object"):
        json_text(object())


# ------------------------------------------------------------------ commands without an arena


def test_demo_json() -> None:
    doc = out("demo", "--seed", "4", "--json")
    assert set(doc) == {"game", "seed", "seed_sha256", "players", "plies", "actions", "seats", "board"}
    assert doc["seats"][0]["seat"] == 0 and {s["rank"] for s in doc["seats"]} <= {1, 2}
    first = doc["actions"][0]
    assert doc["plies"] == len(doc["actions"]) and set(first) == {"ply", "actor", "action"}
    assert first["ply"] == 0 and first["actor"] == -1  # chance deals first


def test_transcript_verify_show_and_html_json(tmp_path: Path) -> None:
    good = DATA / "shanghaien-strikes-forfeit.jsonl"
    lines = good.read_text().splitlines()
    footer = json.loads(lines[-1])
    footer["seed"] = "not-the-seed"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:-1], json.dumps(footer)]) + "\n")
    done = arena("transcript", "verify", str(good), str(bad), "--json", check=1)
    checked = strict(done.stdout)
    assert checked[0] == {"file": str(good), "ok": True, "line": None, "problem": None}
    assert checked[1] == {"file": str(bad), "ok": False, "line": len(lines),
                          "problem": "the revealed seed does not match the header's seed_sha256"}  # fmt: skip
    assert str(bad) in done.stderr
    missing = arena("transcript", "verify", str(tmp_path / "none.jsonl"), "--json", check=2)
    assert missing.stdout == "" and "no such file" in missing.stderr.lower()

    doc = out("transcript", "show", str(good), "--json")
    assert set(doc) == {"file", "header", "events", "footer", "boards", "final_board"}
    assert doc["header"]["rated"] is False and doc["header"]["seats"][0]["seat"] == 0
    chance, seat_ply = doc["events"][0], next(e for e in doc["events"] if e["type"] == "ply" and e["actor"] >= 0)
    assert chance == {"type": "ply", "ply": 0, "actor": -1, "action": chance["action"], "think_ms": None,
                      "bank_ms": None, "fallback": None, "note": None}  # fmt: skip
    assert set(seat_ply) == set(chance) and isinstance(seat_ply["fallback"], bool)
    assert doc["footer"]["end_reason"] == "forfeit" and doc["footer"]["forfeited"] == [0] and doc["boards"] == []
    quiet = out("transcript", "show", str(DATA / "shangrila-4p.jsonl"), "-q", "--boards", "--json")
    assert all(e["type"] != "ply" for e in quiet["events"]) and quiet["boards"] and quiet["final_board"]

    page = tmp_path / "r.html"
    assert out("transcript", "html", str(good), "-o", str(page), "--json") == {
        "html": str(page), "plies": 12, "verified": True, "problem": None}  # fmt: skip


NOISY_BOT = """from sdk import Bot
print("noise at import")


class Noisy(Bot):
    name, version = "noisy", "1"

    def act(self, turn):
        print("noise from act", flush=True)
        return turn.legal_actions[0]
"""
"""A bot that prints to stdout when imported and on every move: the JSON must not see it."""


def test_play_and_tournament_json_hold_only_json_whatever_a_bot_prints(tmp_path: Path) -> None:
    bot = tmp_path / "noisy.py"
    bot.write_text(NOISY_BOT)
    done = arena("play", f"{bot}:Noisy", "--vs", "greedy", "--games", "2", "--seed", "j", "--out",
                 str(tmp_path / "p"), "--json", check=0)  # fmt: skip
    doc = strict(done.stdout)
    assert "noise from act" in done.stderr and "noise at import" in done.stderr and "matches" in done.stderr
    assert doc["games"] == 2 and doc["sprt"] is None and doc["problems"] == [] and finite(doc)
    assert {"elo", "elo_error", "mean_score", "pairwise_score"} <= set(doc)
    # --games 0: refused before anything runs, nothing on stdout (not an Infinity)
    zero = arena("play", "random", "--games", "0", "--json", check=2)
    assert zero.stdout == "" and "--games: must be at least 1" in zero.stderr
    t = out("tournament", "random", "greedy", "--games", "2", "--seed", "t", "--out", str(tmp_path / "t"), "--json")
    assert t["format"] == "round-robin" and len(t["standings"]) == 2 and finite(t)
    assert all(set(row) >= {"player", "opponent", "points", "games", "score"} for row in t["cross_table"])


def test_ladder_rebuild_json(redis_url: str) -> None:
    assert out("ladder", "rebuild", "--game", "shanghaien", "--redis", redis_url, "--json")["results"] == 0
    down = arena("bot", "list", "--gateway", DEAD, "--json", check=1)
    assert down.stdout == "" and "arena: error:" in down.stderr


def test_local_json(tmp_path: Path) -> None:
    done = arena("local", "--data", str(tmp_path / "a"), "--matches", "2", "--game", "shanghaien", "--workers", "1",
                 "--seed", "j", "--json", timeout=300, check=0)  # fmt: skip
    doc = strict(done.stdout)
    password = urlsplit((tmp_path / "a" / "redis-url").read_text().strip()).password
    assert password and password not in done.stderr and ":***@" in done.stderr  # Redis's password is never shown
    assert set(doc) == {"data", "matches", "verified", "transcripts", "problems", "ladders", "web"}
    assert doc["web"].startswith("http://127.0.0.1:")  # the website it ran, at 8080 or a free port
    assert doc["matches"] == doc["verified"] >= 2 and doc["problems"] == []
    (ladder,) = doc["ladders"]
    assert ladder["game_id"] == "shanghaien" and ladder["replay"] is None and Path(ladder["chart"]).exists()
    assert ladder["rows"] and all(set(r) == LADDER_ROW for r in ladder["rows"]) and finite(doc)
    assert all(r["fit"] is not None and r["fit"]["games"] == r["games"] for r in ladder["rows"])  # fitted at the end


# ------------------------------------------------------------------ commands on an arena


async def _cli(*args: str, **kwargs: Any) -> Any:
    """The gateway runs in this test's event loop: each command runs from a thread."""
    return await asyncio.to_thread(out, *args, **kwargs)


def test_every_arena_command_json(redis_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path / "arena", workers=1, redis_url=redis_url, log_level="WARNING",
                              gateway_extra=host_ladder) as a:  # fmt: skip
            g = ["--gateway", a.gateway]
            admin = [*g, "--admin-token", a.admin_token]
            # owners and bots: every field, at its default value too
            made = await _cli("owner", "create", "me", *admin, "--json")
            assert set(made) == {"owner", "token"} and set(made["owner"]) == OWNER_FIELDS
            assert made["owner"]["bots"] == 0 and made["owner"]["name"] == "me"
            owners = await _cli("owner", "list", *admin, "--json")
            assert [o["name"] for o in owners] == ["me"] and set(owners[0]) == OWNER_FIELDS
            assert set(await _cli("owner", "rotate", "me", *admin, "--json")) == {"name", "token"}
            tokens = {}
            for name in ("alpha", "beta", "gamma"):
                reply = await _cli("bot", "register", name, "--owner", "me", "--game", "shanghaien", *admin, "--json")
                assert set(reply["bot"]) == BOT_FIELDS and reply["bot"]["online"] is False
                assert reply["bot"]["matches_running"] == 0 and reply["bot"]["version"] == ""
                tokens[name] = reply["token"]
            off = await _cli("bot", "disable", "gamma", "--reason", "resting", *admin, "--json")
            assert set(off) == BOT_FIELDS and off["enabled"] is False and off["disabled_reason"] == "resting"
            on = await _cli("bot", "enable", "gamma", *admin, "--json")
            assert on["enabled"] is True and on["disabled_reason"] == ""
            assert set(await _cli("bot", "rotate-token", "gamma", *admin, "--json")) == {"name", "token"}

            # two bots, each for two matches, reporting them as JSON when they stop
            run = [sys.executable, "-m", "arena.cli", "bot", "run", "random", "--arena", a.gateway, "--matches", "2"]
            runners = [
                subprocess.Popen(
                    [*run, "--token", tokens[n], "--json"],
                    cwd=ROOT,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for n in ("alpha", "beta")
            ]
            try:
                observer = ArenaClient(a.gateway)
                deadline = time.monotonic() + 60
                while sum(b.online for b in await asyncio.to_thread(observer.list_bots)) < 2:
                    assert time.monotonic() < deadline, "the bots did not come online"
                    await asyncio.sleep(0.2)
                listed = {b["name"]: b for b in await _cli("bot", "list", *g, "--json")}
                assert listed["gamma"]["online"] is False and listed["alpha"]["online"] is True
                assert all(set(b) == BOT_FIELDS for b in listed.values())

                queued = await _cli("match", "request", "alpha", "beta", "--game", "shanghaien", *admin, "--json")
                assert set(queued) == {"match_id", "seed_sha256", "match"} and queued["match"] is None
                waited = await _cli("match", "request", "beta", "alpha", "--game", "shanghaien", "--rated", "--wait",
                                    *admin, "--json")  # fmt: skip
                m = waited["match"]
                assert set(m) == MATCH_FIELDS and m["state"] == "finished" and m["rated"] is True
                assert set(m["result"]) == RESULT_FIELDS and m["result"]["end_reason"] == "completed"
                seats = m["result"]["seats"]
                assert [s["seat"] for s in seats] == [0, 1] and all(set(s) == SEAT_FIELDS for s in seats)
                assert {s["status"] for s in seats} == {"active"} and all(s["strikes"] == 0 for s in seats)
                outcomes = []
                for r in runners:
                    stdout, stderr = await asyncio.to_thread(r.communicate, timeout=120)
                    assert r.returncode == 0, stderr[-2000:]
                    outcomes.append(strict(stdout))
            finally:
                for r in runners:
                    if r.poll() is None:
                        r.kill()
                        r.wait()
                observer.close()
            for played in outcomes:
                assert len(played) == 2 and {o["match_id"] for o in played} == {queued["match_id"], m["match_id"]}
                assert all(set(o) == {"match_id", "game_id", "seat", "end_reason", "seats", "seed", "plies"}
                           for o in played)  # fmt: skip
                assert {o["seat"] for o in played} == {0, 1} and played[0]["seats"][0]["seat"] == 0

            matches = await _cli("match", "list", *g, "--json")
            assert len(matches) == 2 and all(set(x) == MATCH_FIELDS for x in matches)
            unrated = next(x for x in matches if x["match_id"] == queued["match_id"])
            assert unrated["rated"] is False and unrated["state"] == "finished"
            assert await _cli("matches", "list", "--state", "queued", *g, "--json") == []
            assert len(await _cli("matches", "list", "--state", "finished", *g, "--json")) == 2

            # the transcript: followed, downloaded, rendered
            watched = await asyncio.to_thread(arena, "match", "watch", m["match_id"], *g, "--json")
            lines = watched.stdout.splitlines()
            events = [json.loads(line, parse_constant=_no_constant) for line in lines]
            assert events[0]["type"] == "header" and events[-1]["type"] == "footer"
            one = tmp_path / "one.jsonl"
            assert lines == (await asyncio.to_thread(ArenaClient(a.gateway).transcript, m["match_id"]))[0].splitlines()
            (got,) = await _cli("transcript", "get", m["match_id"], *g, "--json")
            assert got == {"match_id": m["match_id"], "full": False, "file": None, "html": None, "transcript": events}
            (saved,) = await _cli("transcript", "get", m["match_id"], "-o", str(one), *g, "--json")
            assert saved["file"] == str(one) and saved["transcript"] is None and one.read_text().splitlines() == lines
            folder = str(tmp_path / "all")
            both = await _cli("transcript", "get", "--bot", "alpha", "-o", folder, "--html", *g, "--json")
            assert len(both) == 2 and all(Path(x["file"]).exists() and Path(x["html"]).exists() for x in both)
            page = await _cli("transcript", "html", m["match_id"], "-o", str(tmp_path / "m.html"), *g, "--json")
            assert page["verified"] is True and page["problem"] is None

            # the ladder: the rated match applied by a rebuild, then read through the gateway
            rebuilt = await _cli("ladder", "rebuild", "--game", "shanghaien", "--redis", redis_url, "--json")
            assert set(rebuilt) == {"game_id", "results", "seconds"} and rebuilt["results"] == 1
            board = await _cli("ladder", "show", "--game", "shanghaien", *g, "--json")
            assert board["game_id"] == "shanghaien" and [r["rank"] for r in board["rows"]] == [1, 2]
            assert all(set(r) == LADDER_ROW and r["provisional"] is True for r in board["rows"])
            assert all(set(r["fit"]) == {"rating", "error", "sd", "games"} and r["fit"]["games"] == 1
                       for r in board["rows"])  # the rebuild made the whole-history fit  # fmt: skip
            history = await _cli("ladder", "history", "alpha", "--game", "shanghaien", *g, "--json")
            assert [set(h) for h in history] == [{"game_id", "bot_name", "bot_version", "points"}]
            assert [p["match_id"] for p in history[0]["points"]] == [m["match_id"]]
            (pair,) = await _cli("ladder", "h2h", "--game", "shanghaien", "--bot", "beta", *g, "--json")
            assert set(pair) == {"a", "b", "a_wins", "draws", "b_wins"}
            assert {pair["a"][0], pair["b"][0]} == {"alpha", "beta"}
            assert pair["a_wins"] + pair["draws"] + pair["b_wins"] == 1
            nobody = await asyncio.to_thread(arena, "ladder", "history", "gamma", *g, "--json", check=1)
            assert nobody.stdout == "" and "no rated matches" in nobody.stderr

    asyncio.run(main())
